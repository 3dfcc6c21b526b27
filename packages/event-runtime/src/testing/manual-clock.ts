import type { Clock } from '../clock.js';

/** A clock a test moves by hand, so lease expiry is tested without real sleeps. */
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

  /** Starts at `startMs` (default 2023-11-14T22:13:20Z, a fixed, realistic epoch). */
  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  /** Throws a plain `Error` for a negative or non-integer step: time never runs backwards. */
  advance(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new Error(`a ManualClock advances by a non-negative integer of ms, got ${ms}`);
    }
    this.nowMs += ms;
  }
}
