/**
 * `pnpm --filter @loom/bench-throughput bench`: P1 raw append, P3/P4/P5 executions, P8 read
 * path, P11 effect/write crossover (LOOM_BENCH_SECTIONS picks a subset). See README.md.
 */
import { appendSuite } from './append-suite.js';
import { runBench, type Section } from './bench-run.js';
import { crossoverSuite } from './crossover-suite.js';
import { executionSuite } from './execution-suite.js';
import { readKnobs } from './knobs.js';
import { readPathSuite } from './read-path-suite.js';

const bySection = { p1: appendSuite, p3: executionSuite, p8: readPathSuite, p11: crossoverSuite };
let sections: Section[];
try {
  sections = readKnobs(process.env).sections.map((name) => bySection[name]);
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(2);
}
await runBench('bench', 'Loom kernel throughput: bench', sections);
