/** Where middleware gets time from. Structurally the kernel's `Clock`; inject one in tests. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** Calls `fn` once after `ms` milliseconds; the returned function cancels it. */
export type SetTimer = (fn: () => void, ms: number) => () => void;

/** Injected so tests and simulation (`@loom/dst`) own time; both default to the real ones. */
export interface TimeOptions {
  clock?: Clock;
  setTimer?: SetTimer;
}

/**
 * Epoch milliseconds from the monotonic high-resolution timer: sub-millisecond durations, and
 * never runs backwards when the wall clock is adjusted (a breaker or a bucket must not).
 */
export const systemClock: Clock = { now: () => performance.timeOrigin + performance.now() };

/** `setTimeout`/`clearTimeout`. The timer is not unref'd: a pending retry keeps the process up. */
export const systemSetTimer: SetTimer = (fn, ms) => {
  const handle = setTimeout(fn, ms);
  return () => clearTimeout(handle);
};
