/** Cancels a timer armed on a {@link Clock}; calling it again, or after the timer fired, does nothing. */
export type CancelTimer = () => void;

/** How a timer armed on a {@link Clock} treats the process. */
export interface TimerOptions {
  /**
   * Keep the process alive while the timer is armed. Default false: Loom's background timers
   * (lease renewals, polls, listener retries) must never hold a process open by themselves.
   */
  keepAlive?: boolean;
}

/**
 * Where Loom gets time from: the current instant and every timer. The kernel, the flow layer,
 * the middleware and the queue workers arm no timer of their own; they ask the clock, so a test
 * (`ManualClock`) or a simulation owns all of time by injecting one.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now. */
  setTimer(fn: () => void, ms: number, options?: TimerOptions): CancelTimer;
  /** Calls `fn` every `everyMs` milliseconds (first call `everyMs` from now) until cancelled. */
  setRepeating(fn: () => void, everyMs: number, options?: TimerOptions): CancelTimer;
  /**
   * Calls `fn` once the current turn of I/O is over (what `setImmediate` does): not a moment in
   * time but a point in the order of work. The journal lets every record of one turn join one
   * append, and leases group-commit the acquires of one turn, through it; a simulation that owns
   * the order of work owns it here.
   */
  defer(fn: () => void): void;
}

/** Node's timers accept at most 2^31 − 1 ms; a longer delay would fire at once. */
const nodeTimerMaxMs = 2 ** 31 - 1;

function realTimer(fn: () => void, ms: number, keepAlive: boolean): CancelTimer {
  let handle: NodeJS.Timeout;
  let cancelled = false;
  const arm = (remainingMs: number) => {
    const stepMs = Math.min(Math.max(0, remainingMs), nodeTimerMaxMs);
    handle = setTimeout(() => {
      if (cancelled) return;
      if (remainingMs > stepMs) arm(remainingMs - stepMs);
      else fn();
    }, stepMs);
    if (!keepAlive) handle.unref();
  };
  arm(ms);
  return () => {
    cancelled = true;
    clearTimeout(handle);
  };
}

/** The wall clock and Node's own timers. The only place in Loom that arms a real timer. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (fn, ms, options) => realTimer(fn, ms, options?.keepAlive === true),
  setRepeating: (fn, everyMs, options) => {
    const handle = setInterval(fn, Math.min(Math.max(1, everyMs), nodeTimerMaxMs));
    if (options?.keepAlive !== true) handle.unref();
    return () => clearInterval(handle);
  },
  defer: (fn) => {
    setImmediate(fn);
  },
};

/** Resolves after `delayMs` on `clock`'s timers (unref'd: it never holds the process open). */
export function sleepOn(clock: Clock, delayMs: number): Promise<void> {
  return new Promise((resolve) => {
    clock.setTimer(resolve, delayMs);
  });
}
