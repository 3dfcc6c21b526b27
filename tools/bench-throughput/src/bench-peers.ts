/** `pnpm --filter @loom/bench-throughput bench:peers`: Loom against DBOS Transact on one Postgres server. See README.md. */
import { runBench } from './bench-run.js';
import { peersSuite } from './peers-suite.js';

await runBench('bench:peers', 'Loom and DBOS Transact: bench:peers', [peersSuite]);
