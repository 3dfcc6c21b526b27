import type { Clock } from '../clock.js';
import type { LeaseStore } from '../lease-store.js';
import { Limits } from '../limits.js';
import type { RuntimeEvents } from './runtime-events.js';

export interface LeaseManagerOptions {
  store: LeaseStore;
  nodeId: string;
  clock: Clock;
  ttlMs: number;
  /** How often the held leases are renewed (one `renewMany` per `leaseBatchMax`). Default ttl/3. */
  renewEveryMs: number;
  /** Lazy mode: how long a fresh start drives before it takes a lease. */
  lazyGraceMs: number;
  /** Where `lease:acquired`, `lease:renewed` and `lease:lost` are emitted. */
  events: RuntimeEvents;
  /** Called with executions whose lease this node no longer holds. */
  onLost: (executionIds: string[]) => void;
  /** Called when a background lease call fails (the next tick tries again). */
  onError: (error: unknown) => void;
}

/** What one group-committed acquire decided, per id. */
interface Acquired {
  granted: Set<string>;
  /** Ids whose chunk failed, with the error its `acquireMany` threw. */
  failed: Map<string, unknown>;
}

interface Batch<T> {
  ids: Set<string>;
  done: Promise<T>;
}

/**
 * A node's leases, batched: every held lease is renewed once per tick, in one `renewMany` per
 * `leaseBatchMax` ids (never a timer per execution); acquires asked for in the same event-loop
 * turn share one `acquireMany` per `leaseBatchMax` ids, and releases ride with the next tick in
 * one `releaseMany` per `leaseBatchMax` ids. Lazy starts are remembered with their start time and
 * leased by the tick once they have been driving for the grace, so executions shorter than the
 * grace never touch the lease store.
 */
export class LeaseManager {
  private readonly held = new Set<string>();
  private readonly lazy = new Map<string, number>();
  private acquiring: Batch<Acquired> | undefined;
  /** Ids asked for whose `acquireMany` has not answered yet (batched or in flight). */
  private readonly pending = new Set<string>();
  /** Pending ids released before their acquire answered: a grant is given straight back. */
  private readonly cancelled = new Set<string>();
  private readonly releasing = new Set<string>();
  /** The `releaseMany` calls in flight (one flush), and the ids they carry. */
  private flushing: Batch<void> | undefined;
  /** Ids whose acquire waits for the release of the same lease in flight. */
  private readonly afterFlush = new Set<string>();
  private stopTimer: (() => void) | undefined;
  private ticking: Promise<void> | undefined;
  /** Counts of store calls, for tests and benchmarks. */
  readonly calls = { acquireMany: 0, renewMany: 0, releaseMany: 0 };

  constructor(private readonly options: LeaseManagerOptions) {}

  /** Start the renewal timer. */
  start(): void {
    if (this.stopTimer !== undefined) return;
    this.stopTimer = this.options.clock.setRepeating(
      () => void this.tick(),
      this.options.renewEveryMs,
    );
  }

  holds(executionId: string): boolean {
    return this.held.has(executionId);
  }

  /**
   * Take the lease now (group-committed with others asked for in this event-loop turn). A lease
   * this node already holds is granted without a store call: the renewal tick keeps it, and
   * recovery leases a whole page of executions in one batch before it resumes them one by one.
   * Rejects with the store's error if the `acquireMany` carrying this id failed. A `release` of
   * the id before the store answered wins: the lease is given back and this resolves false.
   * An id whose release this node is still sending (the tick's `releaseMany` in flight) is
   * acquired once that call is done: sent beside it, the release could land after the acquire and
   * delete the fresh lease, and the next renewal would stop the execution's driver as lost.
   */
  async acquire(executionId: string): Promise<boolean> {
    this.lazy.delete(executionId);
    this.releasing.delete(executionId);
    this.cancelled.delete(executionId);
    if (this.held.has(executionId)) return true;
    const flushing = this.flushing;
    if (flushing?.ids.has(executionId) === true) {
      this.afterFlush.add(executionId);
      await flushing.done;
      this.afterFlush.delete(executionId);
      if (this.cancelled.delete(executionId)) return false;
      if (this.held.has(executionId)) return true;
    }
    this.pending.add(executionId);
    if (this.acquiring === undefined) {
      const ids = new Set<string>();
      const done = nextTurn(this.options.clock).then(() => {
        this.acquiring = undefined;
        return this.acquireChunks([...ids]);
      });
      this.acquiring = { ids, done };
    }
    this.acquiring.ids.add(executionId);
    const { granted, failed } = await this.acquiring.done;
    if (failed.has(executionId)) throw failed.get(executionId);
    return granted.has(executionId);
  }

  /** Leases every id it can in one group commit; returns the ids granted. Rejects like `acquire`. */
  async acquireAll(executionIds: readonly string[]): Promise<Set<string>> {
    const outcomes = await Promise.all(executionIds.map((id) => this.acquire(id)));
    return new Set(executionIds.filter((_, index) => outcomes[index] === true));
  }

  /** One `acquireMany` per chunk; a failed chunk fails only its own ids. */
  private async acquireChunks(ids: string[]): Promise<Acquired> {
    const granted = new Set<string>();
    const failed = new Map<string, unknown>();
    const { store, nodeId, ttlMs } = this.options;
    await Promise.all(
      chunks(ids).map(async (chunk) => {
        this.calls.acquireMany += 1;
        try {
          for (const id of await store.acquireMany(nodeId, chunk, ttlMs)) {
            // Released while this acquire was in flight: the release wins, the grant goes back
            // with the next tick and the acquire answers false.
            if (this.cancelled.has(id)) {
              this.releasing.add(id);
            } else {
              this.held.add(id);
              granted.add(id);
              this.options.events.emit('lease:acquired', { nodeId, executionId: id });
            }
          }
        } catch (error) {
          for (const id of chunk) failed.set(id, error);
        }
        for (const id of chunk) {
          this.pending.delete(id);
          this.cancelled.delete(id);
        }
      }),
    );
    return { granted, failed };
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
    else if (this.pending.has(executionId) || this.afterFlush.has(executionId)) {
      this.cancelled.add(executionId);
    }
  }

  private async flushReleases(): Promise<void> {
    if (this.releasing.size === 0) return;
    const ids = [...this.releasing];
    this.releasing.clear();
    const done = (async () => {
      for (const chunk of chunks(ids)) {
        this.calls.releaseMany += 1;
        await this.options.store.releaseMany(this.options.nodeId, chunk);
      }
    })();
    // An acquire waiting on this flush goes on however it ends (a failed release left the row
    // this node's, which the acquire takes again).
    const flushing: Batch<void> = { ids: new Set(ids), done: done.catch(() => undefined) };
    this.flushing = flushing;
    try {
      await done;
    } finally {
      if (this.flushing === flushing) this.flushing = undefined;
    }
  }

  /** One round: flush releases, renew held leases (one call per chunk), lease lazy starts past the grace. */
  tick(): Promise<void> {
    this.ticking ??= this.runTick().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async runTick(): Promise<void> {
    try {
      await this.flushReleases();
      await this.renewHeld();
      const dueBefore = this.options.clock.now() - this.options.lazyGraceMs;
      const due = [...this.lazy]
        .filter(([, startedAtMs]) => startedAtMs <= dueBefore)
        .map(([id]) => id);
      if (due.length > 0) {
        const granted = await this.acquireAll(due);
        const refused = due.filter((id) => !granted.has(id));
        for (const id of refused) {
          this.options.events.emit('lease:lost', { nodeId: this.options.nodeId, executionId: id });
        }
        if (refused.length > 0) this.options.onLost(refused);
      }
    } catch (error) {
      this.options.onError(error);
    }
  }

  /**
   * Renews every held lease, one `renewMany` per chunk. A chunk that fails is reported and
   * retried next tick (its leases are not lost yet); the other chunks are renewed regardless.
   */
  private async renewHeld(): Promise<void> {
    if (this.held.size === 0) return;
    const lost: string[] = [];
    const { events, nodeId } = this.options;
    for (const chunk of chunks([...this.held])) {
      this.calls.renewMany += 1;
      try {
        const chunkLost = await this.options.store.renewMany(nodeId, chunk, this.options.ttlMs);
        lost.push(...chunkLost);
        if (events.has('lease:renewed')) {
          const gone = new Set(chunkLost);
          for (const id of chunk) {
            if (!gone.has(id)) events.emit('lease:renewed', { nodeId, executionId: id });
          }
        }
      } catch (error) {
        this.options.onError(error);
      }
    }
    if (lost.length > 0) {
      for (const id of lost) {
        this.held.delete(id);
        events.emit('lease:lost', { nodeId, executionId: id });
      }
      this.options.onLost(lost);
    }
  }

  /** Stop the timer, release every held lease (one call per chunk). */
  async shutdown(): Promise<void> {
    this.stopTimer?.();
    this.stopTimer = undefined;
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
function nextTurn(clock: Clock): Promise<void> {
  return new Promise((resolve) => clock.defer(resolve));
}
