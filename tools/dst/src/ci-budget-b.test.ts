import { it } from 'vitest';
import { ciSeedsPerFile, runCiBudget } from './internal/ci-budget.js';

it(`seeds ${ciSeedsPerFile + 1}..${2 * ciSeedsPerFile} of the mixed scenario keep every invariant`, async () => {
  await runCiBudget(ciSeedsPerFile + 1, ciSeedsPerFile);
});
