import type { Clock, SetTimer } from '../time.js';

interface PendingTimer {
  dueMs: number;
  order: number;
  fn: () => void;
}

/**
 * A clock and a timer that stand still until a test moves them, so retry backoff, timeouts,
 * breaker resets and token refills are tested without waiting. Pass `time` as `clock` and
 * `time.setTimer` as `setTimer`.
 *
 * @example
 * const time = new ManualTime();
 * const retry = retryMiddleware({ attempts: 3, clock: time, setTimer: time.setTimer });
 * const pending = wrapEffect(retry, flaky)(ctx);
 * await time.runAll(); // fires every backoff timer, letting the attempts in between run
 * console.log(time.delaysMs); // [100, 200] with jitter 'none'
 */
export class ManualTime implements Clock {
  private nowMs: number;
  private timers: PendingTimer[] = [];
  private timersSet = 0;
  /** Every delay ever passed to `setTimer`, in order (cancelled ones too). */
  readonly delaysMs: number[] = [];

  /** Starts at `startMs` (default 2023-11-14T22:13:20Z, a fixed, realistic epoch). */
  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  /** A {@link SetTimer} on this clock: `fn` runs when `advance` passes its due time. */
  readonly setTimer: SetTimer = (fn, ms) => {
    this.delaysMs.push(ms);
    const timer: PendingTimer = { dueMs: this.nowMs + ms, order: this.timersSet++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  };

  /** Timers set and neither fired nor cancelled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward by `ms`, firing due timers in due order (ties in the order they were
   * set) and letting promise callbacks settle after each, so what a timer wakes runs before
   * the next one fires. Throws a plain `Error` for a negative or non-finite `ms`.
   */
  async advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new Error(`ManualTime advances by a finite, non-negative number of ms, got ${ms}`);
    }
    const targetMs = this.nowMs + ms;
    await settle();
    for (let timer = this.nextDue(targetMs); timer; timer = this.nextDue(targetMs)) {
      this.timers = this.timers.filter((t) => t !== timer);
      this.nowMs = timer.dueMs;
      timer.fn();
      await settle();
    }
    this.nowMs = targetMs;
  }

  /**
   * Fires pending timers one after another, jumping time to each, until none is left. Throws
   * a plain `Error` after `timersMax` timers: something keeps setting new ones.
   */
  async runAll(timersMax = 1_000): Promise<void> {
    await settle();
    for (let fired = 0; this.timers.length > 0; fired++) {
      if (fired >= timersMax) {
        throw new Error(`ManualTime.runAll fired ${timersMax} timers and more keep coming`);
      }
      const next = this.nextDue(Number.POSITIVE_INFINITY)!;
      await this.advance(next.dueMs - this.nowMs);
    }
  }

  private nextDue(untilMs: number): PendingTimer | undefined {
    let next: PendingTimer | undefined;
    for (const timer of this.timers) {
      if (timer.dueMs > untilMs) continue;
      if (
        next === undefined ||
        timer.dueMs < next.dueMs ||
        (timer.dueMs === next.dueMs && timer.order < next.order)
      ) {
        next = timer;
      }
    }
    return next;
  }
}

/** Lets every queued promise callback run: a macrotask runs only once the microtasks drained. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
