// P16 (first half): `schedule` with no cap vs a direct `await`. Absolute numbers only: the
// ratio, interleaved and repeated, comes from `pnpm --filter @loom/scheduler bench:ratio`.
import { bench, describe } from 'vitest';
import {
  directAwait,
  directBurst,
  schedulerBurst,
  schedulerInSeries,
  scheduleUncapped,
} from '../bench/p16-workloads.js';
import { createScheduler } from './scheduler.js';

const awaitsPerIteration = 1000;
const uncapped = createScheduler();
const capped = createScheduler({ concurrencyMax: 8 });

describe(`P16 schedule, ${awaitsPerIteration} awaits in series per iteration`, () => {
  bench('direct await (baseline)', async () => {
    await directAwait(awaitsPerIteration);
  });

  bench('schedule, module-level, no cap (goal ≤ 1.05× baseline)', async () => {
    await scheduleUncapped(awaitsPerIteration);
  });

  bench('createScheduler() with no cap (counts running: informational)', async () => {
    await schedulerInSeries(uncapped, awaitsPerIteration);
  });
});

describe(`P16 schedule, ${awaitsPerIteration} tasks at once per iteration (informational)`, () => {
  bench('Promise.all of direct calls (baseline)', async () => {
    await directBurst(awaitsPerIteration);
  });

  bench('createScheduler({ concurrencyMax: 8 })', async () => {
    await schedulerBurst(capped, awaitsPerIteration);
  });
});
