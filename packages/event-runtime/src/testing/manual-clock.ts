import type { Clock } from '../clock.js';

/** A clock a test moves by hand, so lease expiry and backoff are tested without real sleeps. */
export interface TestClock extends Clock {
  /** Move time forward by `ms` milliseconds. */
  advance(ms: number): void;
}

/**
 * A {@link TestClock} that stands still until advanced. Share one instance between every store
 * handle of a test so they agree on what "now" is.
 *
 * @example
 * const clock = new ManualClock();
 * const leases = new InMemoryLeaseStore({ clock });
 * await leases.acquireMany('node-a', ['order-1'], 1_000);
 * clock.advance(1_000); // the lease has now expired
 */
export class ManualClock implements TestClock {
  private nowMs: number;
  private timers: Array<{ atMs: number; fire: () => void }> = [];

  /** Starts at `startMs` (default 2023-11-14T22:13:20Z, a fixed, realistic epoch). */
  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  /** Timers fire only when {@link advance} reaches them, in due order. */
  setTimer(delayMs: number, fire: () => void): () => void {
    const timer = { atMs: this.nowMs + Math.max(0, delayMs), fire };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((pending) => pending !== timer);
    };
  }

  /** Timers waiting for {@link advance}. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward and fires the timers now due. Throws a plain `Error` for a negative or
   * non-integer step: time never runs backwards.
   */
  advance(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new Error(`a ManualClock advances by a non-negative integer of ms, got ${ms}`);
    }
    this.nowMs += ms;
    const due = this.timers.filter((timer) => timer.atMs <= this.nowMs);
    if (due.length === 0) return;
    this.timers = this.timers.filter((timer) => timer.atMs > this.nowMs);
    for (const timer of due.sort((a, b) => a.atMs - b.atMs)) timer.fire();
  }
}
