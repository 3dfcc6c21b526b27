import {
  type CancelTimer,
  type Clock,
  systemClock as kernelSystemClock,
} from '@loom/event-runtime';

/**
 * Where middleware reads time from: the kernel's `Clock`, of which it needs only `now()`, so any
 * `Clock` is one (`runtime.clock`, `ManualClock`), and so is {@link monotonicClock}. One notion of
 * time in Loom, not a second interface beside the kernel's (ADR 0064).
 */
export type NowClock = Pick<Clock, 'now'>;

/** A `Clock`'s `setTimer` as one function: calls `fn` once after `ms`; the returned function cancels it. */
export type SetTimer = (fn: () => void, ms: number) => CancelTimer;

/**
 * Injected so tests and simulation (`@loom/dst`) own time. A `clock` that also arms timers (the
 * kernel's `Clock`: `runtime.clock`, `ManualClock` of `@loom/event-runtime/testing`) gives the
 * timers too. Without either, timers go on the effect's `ctx.clock` (a kernel step's is its
 * runtime's), else the real `setTimeout`; readings of now default to the monotonic clock.
 */
export interface TimeOptions {
  clock?: NowClock;
  setTimer?: SetTimer;
}

/**
 * Epoch milliseconds from the monotonic high-resolution timer: sub-millisecond durations, and
 * never runs backwards when the wall clock is adjusted (a breaker or a bucket must not).
 */
export const monotonicClock: NowClock = { now: () => performance.timeOrigin + performance.now() };

/**
 * A real timer, armed by the kernel's `systemClock` (the one place in Loom that arms real timers).
 * It keeps the process alive: a pending retry keeps the process up.
 */
export const systemSetTimer: SetTimer = (fn, ms) =>
  kernelSystemClock.setTimer(fn, ms, { keepAlive: true });
