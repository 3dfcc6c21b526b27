import { ciBudgetTests, ciSeedsPerFile } from './internal/ci-budget.js';

ciBudgetTests(ciSeedsPerFile + 1, ciSeedsPerFile);
