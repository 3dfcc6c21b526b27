import type { CancelTimer, Clock, TimerOptions } from '../clock.js';

/** A clock a test moves by hand, so expiry, backoff and timers are tested without real sleeps. */
export interface TestClock extends Clock {
  /** Move time forward by `ms` milliseconds, firing the timers that come due. */
  advance(ms: number): Promise<void>;
}

interface PendingTimer {
  dueMs: number;
  /** Ties on `dueMs` fire in the order the timers were armed. */
  order: number;
  fn: () => void;
  /** Set for a repeating timer: it is re-armed this much later each time it fires. */
  everyMs: number | undefined;
}

/** Rounds of deferred work `advance` lets run between two timers before it calls it a loop. */
const settleRoundsMax = 10_000;

/**
 * A {@link TestClock} that stands still until advanced. Every timer Loom arms on it waits for
 * `advance`, which fires the due ones in due order (ties in the order they were armed) and
 * lets the work each one starts settle before the next fires: deterministic, and no real timer.
 * Share one instance between the runtime and every store handle of a test so they agree on
 * what "now" is.
 *
 * `defer` (work after this turn of I/O, not a moment in time) runs on the real event loop, so
 * a runtime on this clock starts and steps without anyone advancing it; `advance` waits until
 * no deferred work is left before it looks for the next due timer.
 *
 * @example
 * const clock = new ManualClock();
 * const leases = new InMemoryLeaseStore({ clock });
 * await leases.acquireMany('node-a', ['order-1'], 1_000);
 * await clock.advance(1_000); // the lease has now expired
 */
export class ManualClock implements TestClock {
  private nowMs: number;
  private timers: PendingTimer[] = [];
  private armed = 0;
  private deferred = 0;
  /** Every delay ever passed to `setTimer`, in order (cancelled ones too): a retry's backoff. */
  readonly delaysMs: number[] = [];

  /** Starts at `startMs` (default 2023-11-14T22:13:20Z, a fixed, realistic epoch). */
  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  setTimer(fn: () => void, ms: number, _options?: TimerOptions): CancelTimer {
    this.delaysMs.push(ms);
    return this.arm(fn, ms, undefined);
  }

  setRepeating(fn: () => void, everyMs: number, _options?: TimerOptions): CancelTimer {
    return this.arm(fn, everyMs, Math.max(1, everyMs));
  }

  defer(fn: () => void): void {
    this.deferred++;
    setImmediate(() => {
      this.deferred--;
      fn();
    });
  }

  /** Timers armed and neither fired (for one-shot timers) nor cancelled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** When the next timer is due, or undefined when none is armed. */
  get nextDueMs(): number | undefined {
    return this.next(Number.POSITIVE_INFINITY)?.dueMs;
  }

  /**
   * Moves time forward by `ms`, firing due timers in due order and letting what each one starts
   * settle (promise callbacks and deferred work) before the next fires. Time moves at once when
   * no timer is armed, so a caller that does not await still sees the new `now()`. Throws a
   * plain `Error` for a negative or non-integer step: time never runs backwards.
   */
  advance(ms: number): Promise<void> {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new Error(`a ManualClock advances by a non-negative integer of ms, got ${ms}`);
    }
    const targetMs = this.nowMs + ms;
    if (this.timers.length === 0) {
      this.nowMs = targetMs;
      return this.settle();
    }
    return this.advanceTo(targetMs);
  }

  /**
   * Fires timers one after another, jumping time to each, until `done()` holds (checked after
   * each settles) or none is left. Throws a plain `Error` after `timersMax` timers.
   */
  async runUntil(done: () => boolean, timersMax = 10_000): Promise<void> {
    await this.settle();
    for (let fired = 0; !done(); fired++) {
      const next = this.next(Number.POSITIVE_INFINITY);
      if (next === undefined) return;
      if (fired >= timersMax) {
        throw new Error(`ManualClock.runUntil fired ${timersMax} timers and is not done`);
      }
      await this.advanceTo(next.dueMs);
    }
  }

  /**
   * Fires every pending timer, jumping time to each, until none is left (what a timer starts
   * runs before the next fires). Throws a plain `Error` after `timersMax` timers: something
   * keeps arming new ones (a repeating timer never runs out; use {@link runUntil} for those).
   */
  async runAll(timersMax = 10_000): Promise<void> {
    await this.runUntil(() => this.timers.length === 0, timersMax);
  }

  /**
   * Settles `promise` by firing timers in due order (a retry's backoff, a timeout) until it
   * does, and returns what it settled with. Throws like {@link runUntil} past `timersMax`.
   *
   * @example
   * const result = await clock.runUntilSettled(runtime.start(flow, input).then((h) => h.result()));
   */
  async runUntilSettled<T>(promise: Promise<T>, timersMax = 10_000): Promise<T> {
    let settled = false;
    const tracked = promise.finally(() => {
      settled = true;
    });
    tracked.catch(() => undefined);
    await this.runUntil(() => settled, timersMax);
    return tracked;
  }

  private async advanceTo(targetMs: number): Promise<void> {
    await this.settle();
    for (let timer = this.next(targetMs); timer; timer = this.next(targetMs)) {
      this.nowMs = Math.max(this.nowMs, timer.dueMs);
      if (timer.everyMs === undefined) this.timers = this.timers.filter((t) => t !== timer);
      else {
        timer.dueMs += timer.everyMs;
        timer.order = this.armed++;
      }
      timer.fn();
      await this.settle();
    }
    this.nowMs = Math.max(this.nowMs, targetMs);
  }

  private arm(fn: () => void, ms: number, everyMs: number | undefined): CancelTimer {
    const timer: PendingTimer = {
      dueMs: this.nowMs + Math.max(0, ms),
      order: this.armed++,
      fn,
      everyMs,
    };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Lets promise callbacks and deferred work run until none is left. */
  private async settle(): Promise<void> {
    for (let round = 0; round < settleRoundsMax; round++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.deferred === 0) return;
    }
    throw new Error(`ManualClock: deferred work kept coming for ${settleRoundsMax} rounds`);
  }

  private next(untilMs: number): PendingTimer | undefined {
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
