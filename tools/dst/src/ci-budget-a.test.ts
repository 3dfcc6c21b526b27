import { expect, it } from 'vitest';
import { ciSeedsPerFile, runCiBudget } from './internal/ci-budget.js';

it(`seeds 1..${ciSeedsPerFile} of the mixed scenario keep every invariant`, async () => {
  const stats = await runCiBudget(1, ciSeedsPerFile);
  // The runtimes' group commit (ADR 0040) ran under the faults: writes carried several
  // executions' appends, and some of them failed, tore or lost their answer as a whole.
  expect(stats.batchedWrites).toBeGreaterThan(0);
  expect(stats.batchedWritesFailed).toBeGreaterThan(0);
});
