/** Where the kernel gets time from. Inject one to own time in tests and simulation. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Calls `fire` once, `delayMs` from now on this clock; returns a cancel. The kernel's own
   * waits (store retry backoff) go through it, so a simulation that owns time owns them too.
   * Optional: a clock without it gets the system's timers (see {@link setClockTimer}).
   */
  setTimer?(delayMs: number, fire: () => void): () => void;
}

/**
 * System timers, unref'd: a backoff never keeps a process alive by itself (a waiting
 * `result()` or `serve()` does).
 */
function systemTimer(delayMs: number, fire: () => void): () => void {
  const timer = setTimeout(fire, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now(), setTimer: systemTimer };

/** Schedules `fire` on `clock`'s timers, or the system's when the clock has none. */
export function setClockTimer(clock: Clock, delayMs: number, fire: () => void): () => void {
  return clock.setTimer === undefined ? systemTimer(delayMs, fire) : clock.setTimer(delayMs, fire);
}

/** Resolves after `delayMs` on `clock` (see {@link setClockTimer}). */
export function sleepOn(clock: Clock, delayMs: number): Promise<void> {
  return new Promise((resolve) => {
    setClockTimer(clock, delayMs, resolve);
  });
}
