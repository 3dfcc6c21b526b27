import type { Clock } from '../clock.js';
import type { LeaseStore } from '../lease-store.js';
import { Limits } from '../limits.js';

export interface LeaseManagerOptions {
  store: LeaseStore;
  nodeId: string;
  clock: Clock;
  ttlMs: number;
  /** How often one `renewMany` renews every held lease. Default ttl/3. */
  renewEveryMs: number;
  /** Lazy mode: how long a fresh start drives before it takes a lease. */
  lazyGraceMs: number;
  /** Called with executions whose lease this node no longer holds. */
  onLost: (executionIds: string[]) => void;
  /** Called when a background lease call fails (the next tick tries again). */
  onError: (error: unknown) => void;
}

interface Batch<T> {
  ids: Set<string>;
  done: Promise<T>;
}

/**
 * A node's leases, batched: every held lease is renewed by one `renewMany` per tick (per
 * `leaseBatchMax` ids; never a timer per execution); acquires asked for in the same event-loop
 * turn share one `acquireMany`, and releases ride with the next tick in one `releaseMany`.
 * Lazy starts are remembered with their start time and leased by the tick once they have been
 * driving for the grace, so executions shorter than the grace never touch the lease store.
 */
export class LeaseManager {
  private readonly held = new Set<string>();
  private readonly lazy = new Map<string, number>();
  private acquiring: Batch<Set<string>> | undefined;
  private readonly releasing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  /** Counts of store calls, for tests and benchmarks. */
  readonly calls = { acquireMany: 0, renewMany: 0, releaseMany: 0 };

  constructor(private readonly options: LeaseManagerOptions) {}

  /** Start the renewal timer. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.tick(), this.options.renewEveryMs);
    this.timer.unref();
  }

  holds(executionId: string): boolean {
    return this.held.has(executionId);
  }

  /** Take the lease now (group-committed with others asked for in this tick). */
  async acquire(executionId: string): Promise<boolean> {
    this.lazy.delete(executionId);
    this.releasing.delete(executionId);
    if (this.acquiring === undefined) {
      const ids = new Set<string>();
      const done = nextTurn().then(async () => {
        this.acquiring = undefined;
        this.calls.acquireMany += 1;
        const granted = await this.options.store.acquireMany(
          this.options.nodeId,
          [...ids],
          this.options.ttlMs,
        );
        for (const id of granted) this.held.add(id);
        return granted;
      });
      this.acquiring = { ids, done };
    }
    this.acquiring.ids.add(executionId);
    const granted = await this.acquiring.done;
    return granted.has(executionId);
  }

  /** Lazy mode: lease this fresh execution only if it is still driving after the grace. */
  acquireLater(executionId: string): void {
    this.lazy.set(executionId, this.options.clock.now());
  }

  /**
   * Give the lease up. Releases ride with the next tick (one `releaseMany` for all of them): a
   * settled execution needs no driving, so its lease row may outlive it by a tick.
   */
  release(executionId: string): void {
    this.lazy.delete(executionId);
    if (this.held.delete(executionId)) this.releasing.add(executionId);
  }

  private async flushReleases(): Promise<void> {
    if (this.releasing.size === 0) return;
    const ids = [...this.releasing];
    this.releasing.clear();
    for (const chunk of chunks(ids)) {
      this.calls.releaseMany += 1;
      await this.options.store.releaseMany(this.options.nodeId, chunk);
    }
  }

  /** One round: flush releases, renew all held leases in one call, lease lazy starts past the grace. */
  tick(): Promise<void> {
    this.ticking ??= this.runTick().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async runTick(): Promise<void> {
    try {
      await this.flushReleases();
      if (this.held.size > 0) {
        const ids = [...this.held];
        this.calls.renewMany += 1;
        const lost = await this.options.store.renewMany(
          this.options.nodeId,
          ids,
          this.options.ttlMs,
        );
        if (lost.length > 0) {
          for (const id of lost) this.held.delete(id);
          this.options.onLost(lost);
        }
      }
      const dueBefore = this.options.clock.now() - this.options.lazyGraceMs;
      const due = [...this.lazy]
        .filter(([, startedAtMs]) => startedAtMs <= dueBefore)
        .map(([id]) => id);
      if (due.length > 0) {
        const outcomes = await Promise.all(due.map((id) => this.acquire(id)));
        const refused = due.filter((_, index) => outcomes[index] !== true);
        if (refused.length > 0) this.options.onLost(refused);
      }
    } catch (error) {
      this.options.onError(error);
    }
  }

  /** Stop the timer, release every held lease in one call. */
  async shutdown(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
    this.lazy.clear();
    for (const id of [...this.held]) this.release(id);
    await this.flushReleases().catch((error) => this.options.onError(error));
  }
}

/** Splits ids into batches the lease store accepts (`Limits.leaseBatchMax`). */
function chunks(ids: string[]): string[][] {
  const batches: string[][] = [];
  for (let start = 0; start < ids.length; start += Limits.leaseBatchMax) {
    batches.push(ids.slice(start, start + Limits.leaseBatchMax));
  }
  return batches;
}

/** Resolves on the next event-loop turn: the window in which acquires or releases group-commit. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
