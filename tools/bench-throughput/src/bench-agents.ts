/** `pnpm --filter @loom/bench-throughput bench:agents`: P6 agent fan-out, P7 turn cost against run length. See README.md. */
import { agentFanoutSuite, agentLengthSuite } from './agent-suite.js';
import { runBench } from './bench-run.js';

await runBench('bench:agents', 'Loom agent runs: bench:agents', [
  agentFanoutSuite,
  agentLengthSuite,
]);
