// The P16 workloads, shared by the vitest bench files (absolute numbers) and bench/p16.ts
// (interleaved A/B ratios). Each function runs a whole batch, so a timer's or a bench
// harness's own per-call overhead does not swamp a ~100 ns operation.
import {
  type ParallelLimitContext,
  type ParallelLimitFn,
  parallelLimit,
  schedule,
} from '../src/index.js';
import { neverAborts } from '../src/internal/never-aborts.js';
import type { Scheduler } from '../src/scheduler.js';

/** The trivial task: all the cost measured is the wrapping around it. */
export const task = async (_signal: AbortSignal): Promise<number> => 1;

/**
 * Baseline: `await task(signal)` called directly, `count` times in a row. It passes the very
 * signal `schedule` passes, so the two sides differ only by `schedule` itself (passing another
 * AbortSignal measured a few % apart on its own).
 */
export async function directAwait(count: number): Promise<number> {
  let sum = 0;
  for (let i = 0; i < count; i++) sum += await task(neverAborts);
  return sum;
}

/** The module-level `schedule` (no cap), `count` times in a row. */
export async function scheduleUncapped(count: number): Promise<number> {
  let sum = 0;
  for (let i = 0; i < count; i++) sum += await schedule(task);
  return sum;
}

/** A `Scheduler`'s `schedule`, `count` times in a row (one at a time: nothing ever queues). */
export async function schedulerInSeries(scheduler: Scheduler, count: number): Promise<number> {
  let sum = 0;
  for (let i = 0; i < count; i++) sum += await scheduler.schedule(task);
  return sum;
}

/** `count` tasks submitted at once to a capped scheduler (most of them queue). */
export async function schedulerBurst(scheduler: Scheduler, count: number): Promise<number> {
  const all: Promise<number>[] = [];
  for (let i = 0; i < count; i++) all.push(scheduler.schedule(task));
  return (await Promise.all(all)).length;
}

/** Baseline for the burst: `count` direct task calls under `Promise.all`. */
export async function directBurst(count: number): Promise<number> {
  const all: Promise<number>[] = [];
  for (let i = 0; i < count; i++) all.push(task(neverAborts));
  return (await Promise.all(all)).length;
}

export const double = async (item: number): Promise<number> => item * 2;

/** Like `double`, but reads the shared signal, so parallelLimit must make an AbortController. */
export const doubleReadingSignal = async (
  item: number,
  _index: number,
  context: ParallelLimitContext,
): Promise<number> => (context.signal.aborted ? 0 : item * 2);

export function itemsOf(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}

/** Baseline: `Promise.all(items.map(fn))`, `rounds` times in a row. */
export async function promiseAll(items: number[], rounds: number): Promise<number> {
  let sum = 0;
  for (let r = 0; r < rounds; r++)
    sum += (await Promise.all(items.map((item) => double(item)))).length;
  return sum;
}

/** `parallelLimit(items, limit, fn)`, `rounds` times in a row. */
export async function parallel(
  items: number[],
  limit: number,
  rounds: number,
  fn: ParallelLimitFn<number, number> = double,
): Promise<number> {
  let sum = 0;
  for (let r = 0; r < rounds; r++) sum += (await parallelLimit(items, limit, fn)).length;
  return sum;
}
