import type { CancelTimer, Clock, TimerOptions } from '@loom/event-runtime';

/**
 * One simulated node's view of the shared virtual clock. Every timer and deferred call of the
 * node's runtime goes through it, so the simulation can freeze the node (`pause`: like SIGSTOP,
 * nothing of it runs; what came due meanwhile runs at `resume`, like SIGCONT) or kill it (`kill`:
 * its timers never fire again, like SIGKILL).
 */
export class NodeClock implements Clock {
  private paused = false;
  private dead = false;
  private held: Array<() => void> = [];
  private readonly cancels = new Set<CancelTimer>();
  private waiters: Array<() => void> = [];

  constructor(private readonly shared: Clock) {}

  now(): number {
    return this.shared.now();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  get isDead(): boolean {
    return this.dead;
  }

  setTimer(fn: () => void, ms: number, options?: TimerOptions): CancelTimer {
    let cancel: CancelTimer = () => undefined;
    const fire = this.gate(() => {
      this.cancels.delete(cancel);
      fn();
    });
    cancel = this.track(this.shared.setTimer(fire, ms, options));
    return cancel;
  }

  setRepeating(fn: () => void, everyMs: number, options?: TimerOptions): CancelTimer {
    // A paused process runs an interval once when it resumes, not once per missed period.
    let pending = false;
    const fire = this.gate(() => {
      pending = false;
      fn();
    });
    return this.track(
      this.shared.setRepeating(
        () => {
          if (pending) return;
          pending = this.paused;
          fire();
        },
        everyMs,
        options,
      ),
    );
  }

  defer(fn: () => void): void {
    this.shared.defer(this.gate(fn));
  }

  /** Resolves when the node runs (at once unless paused); never resolves for a dead node. */
  whenRunning(): Promise<void> {
    if (this.dead) return new Promise(() => undefined);
    if (!this.paused) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  pause(): void {
    if (!this.dead) this.paused = true;
  }

  resume(): void {
    if (this.dead || !this.paused) return;
    this.paused = false;
    for (const fn of this.held.splice(0)) this.shared.defer(fn);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** The process is gone: nothing armed on this clock fires again. */
  kill(): void {
    this.dead = true;
    this.paused = false;
    this.held = [];
    this.waiters = [];
    for (const cancel of this.cancels) cancel();
    this.cancels.clear();
  }

  private gate(fn: () => void): () => void {
    return () => {
      if (this.dead) return;
      if (this.paused) this.held.push(fn);
      else fn();
    };
  }

  private track(cancel: CancelTimer): CancelTimer {
    const tracked = () => {
      this.cancels.delete(tracked);
      cancel();
    };
    this.cancels.add(tracked);
    return tracked;
  }
}
