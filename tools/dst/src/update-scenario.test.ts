import { expect } from 'vitest';
import { ciBudgetTests } from './internal/ci-budget.js';
import { updateScenario } from './update-scenario.js';

/** Seeds of the updates scenario per CI run (each about as costly as a mixed seed's third). */
const updateSeeds = 40;

ciBudgetTests(1, updateSeeds, updateScenario, (stats) => {
  // Clients got answers under the faults (each update at least once, some twice).
  expect(stats.updatesAnswered).toBeGreaterThanOrEqual(updateSeeds * 6);
});
