/**
 * The order variants run in within one repeat: rotated by the repeat index, so each variant
 * runs first, second, … equally often and a drift in the machine (another job starting, a
 * table growing, the page cache warming) is shared between variants instead of landing on one.
 */
export function rotatingOrder<T>(variants: readonly T[], repeat: number): T[] {
  if (variants.length === 0) return [];
  const shift = ((repeat % variants.length) + variants.length) % variants.length;
  return [...variants.slice(shift), ...variants.slice(0, shift)];
}

/** One slot of an interleaved schedule: which repeat, which variant. */
export interface ScheduledRun<T> {
  repeat: number;
  variant: T;
}

/**
 * The whole schedule, A B A B: every variant once per repeat, in {@link rotatingOrder}, repeats
 * one after another. Variants compared by a ratio are always measured in the same repeat.
 */
export function interleavedSchedule<T>(variants: readonly T[], repeats: number): ScheduledRun<T>[] {
  const schedule: ScheduledRun<T>[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    for (const variant of rotatingOrder(variants, repeat)) schedule.push({ repeat, variant });
  }
  return schedule;
}
