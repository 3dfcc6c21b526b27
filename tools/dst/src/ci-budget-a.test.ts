import { expect } from 'vitest';
import { ciBudgetTests, ciSeedsPerFile } from './internal/ci-budget.js';
import { mixedScenario } from './mixed-scenario.js';

ciBudgetTests(1, ciSeedsPerFile, mixedScenario, (stats) => {
  // The runtimes' group commit (ADR 0040) ran under the faults: writes carried several
  // executions' appends, and some of them failed, tore or lost their answer as a whole.
  expect(stats.batchedWrites).toBeGreaterThan(0);
  expect(stats.batchedWritesFailed).toBeGreaterThan(0);
});
