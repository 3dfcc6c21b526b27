/** `pnpm --filter @loom/bench-throughput bench:lease`: P9, lease overhead. See README.md. */
import { runBench } from './bench-run.js';
import { leaseSuite } from './lease-suite.js';

await runBench('bench:lease', 'Loom kernel throughput: bench:lease', [leaseSuite]);
