// P16 (second half): `parallelLimit` with no limit vs `Promise.all`. Absolute numbers only: the
// ratio, interleaved and repeated, comes from `pnpm --filter @loom/scheduler bench:ratio`.
import { bench, describe } from 'vitest';
import { doubleReadingSignal, itemsOf, parallel, promiseAll } from '../bench/p16-workloads.js';

for (const count of [10, 100, 1000]) {
  const items = itemsOf(count);
  const rounds = Math.max(1, 1000 / count);

  describe(`P16 parallelLimit, ${count} items × ${rounds} calls per iteration`, () => {
    bench('Promise.all(items.map(fn)) (baseline)', async () => {
      await promiseAll(items, rounds);
    });

    bench('parallelLimit(items, Infinity, fn) (goal ≤ 2× baseline)', async () => {
      await parallel(items, Number.POSITIVE_INFINITY, rounds);
    });

    bench('parallelLimit(items, Infinity, fn reading context.signal) (informational)', async () => {
      await parallel(items, Number.POSITIVE_INFINITY, rounds, doubleReadingSignal);
    });

    bench('parallelLimit(items, 8, fn) (informational)', async () => {
      await parallel(items, 8, rounds);
    });
  });
}
