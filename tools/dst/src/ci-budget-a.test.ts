import { it } from 'vitest';
import { ciSeedsPerFile, runCiBudget } from './internal/ci-budget.js';

it(`seeds 1..${ciSeedsPerFile} of the mixed scenario keep every invariant`, async () => {
  await runCiBudget(1, ciSeedsPerFile);
});
