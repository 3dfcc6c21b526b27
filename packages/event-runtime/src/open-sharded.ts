import type { Backend } from './backend.js';
import type { EventStore } from './event-store.js';
import { readTarget } from './internal/read-target.js';
import type { LeaseStore } from './lease-store.js';
import type { QueueStore } from './queue-store.js';
import { ShardedEventStore } from './sharded-event-store.js';
import type { Snapshot, SnapshotStore, SnapshotWithTail } from './snapshot-store.js';

/**
 * Snapshots kept beside their execution's events: each call goes to the shard `shardOf` picks
 * for the execution, so `loadWithTail` through a {@link ShardedEventStore} over the same shards
 * stays one call on that shard's database.
 */
export class ShardedSnapshotStore implements SnapshotStore {
  constructor(
    readonly shards: readonly SnapshotStore[],
    private readonly events: ShardedEventStore,
  ) {}

  private shard(executionId: string): SnapshotStore {
    return this.shards[this.events.shardIndex(executionId)] as SnapshotStore;
  }

  save(snapshot: Snapshot): Promise<void> {
    const id = (snapshot as Partial<Snapshot> | undefined)?.executionId;
    return (typeof id === 'string' ? this.shard(id) : (this.shards[0] as SnapshotStore)).save(
      snapshot,
    );
  }

  load(executionId: string): Promise<Snapshot | undefined> {
    return this.shard(executionId).load(executionId);
  }

  /** The shard's combined read when `events` is the sharded store it was opened with. */
  async loadWithTail(
    events: EventStore,
    executionId: string,
    limit: number,
  ): Promise<SnapshotWithTail | undefined> {
    if (readTarget(events) !== this.events) return undefined;
    const index = this.events.shardIndex(executionId);
    const combined = await this.shards[index]?.loadWithTail?.(
      this.events.shards[index] as EventStore,
      executionId,
      limit,
    );
    if (combined === undefined) return undefined;
    return {
      snapshot: combined.snapshot,
      events: combined.events.map((event) => this.events.merged(event, index)),
    };
  }

  /** Each execution's snapshot forgotten on its shard, where that shard's store can forget. */
  async forget(executionIds: readonly string[]): Promise<void> {
    for (const executionId of executionIds) {
      await this.shard(executionId).forget?.([executionId]);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.map((store) => store.close()));
  }
}

/** The {@link Backend} of {@link openSharded}. */
export interface ShardedBackend extends Backend {
  readonly kind: 'sharded';
  readonly events: ShardedEventStore;
  readonly snapshots: ShardedSnapshotStore;
  /** The backends it was opened over, in shard order (shard 0 first). */
  readonly shards: readonly Backend[];
}

/**
 * One backend over several (each from `openMemory`, `openSqlite` or `openPostgres`, typically
 * one per database server): executions are spread over them by {@link shardOf}.
 *
 * - `events`: a {@link ShardedEventStore} over every shard's log.
 * - `snapshots`: per execution on its events' shard (so loading state stays one round trip).
 * - `leases` and `queues`: shard 0's. Leases and node claims answer "which node drives what, and
 *   is it alive" for the whole cluster in one place, and a node renews them in one batch per
 *   tick (its cost grows with nodes, not with events). A queue is ordered and deduplicated per
 *   queue, not per execution.
 * - `live`: shard 0's live channel (short-lived text, no ordering across executions to keep).
 *
 * The order of `backends` is part of the data's address: always pass the same backends in the
 * same order, and never remove one (see docs/scaling.md to grow). `migrate()` migrates every
 * shard; `close()` closes every shard, shard 0 last.
 *
 * Error codes: `INVALID_ARGUMENT` (no backends, more than `shardCountMax`), and the shards'.
 *
 * @example
 * import { openSharded } from '@loom/event-runtime';
 * import { openPostgres } from '@loom/event-runtime/postgres';
 * const backend = openSharded([
 *   await openPostgres({ connectionString: 'postgres://db-0/app', migrate: true }),
 *   await openPostgres({ connectionString: 'postgres://db-1/app', migrate: true }),
 * ]);
 * // createRuntime({ backend, flows: [order] }) in @loom/workflow-runtime
 * await backend.close();
 */
export function openSharded(backends: readonly Backend[]): ShardedBackend {
  const events = new ShardedEventStore(
    Array.isArray(backends) ? backends.map((backend) => backend.events) : (backends as never),
  );
  const first = backends[0] as Backend;
  const snapshots = new ShardedSnapshotStore(
    backends.map((backend) => backend.snapshots),
    events,
  );
  let closing: Promise<void> | undefined;
  return {
    kind: 'sharded',
    events,
    leases: first.leases as LeaseStore,
    snapshots,
    queues: first.queues as QueueStore,
    ...(first.live === undefined ? {} : { live: first.live }),
    shards: [...backends],
    migrate: async () => {
      for (const backend of backends) await backend.migrate();
    },
    close: () => {
      closing ??= (async () => {
        const failures: unknown[] = [];
        for (const backend of [...backends].reverse()) {
          await backend.close().catch((error: unknown) => failures.push(error));
        }
        if (failures.length > 0) throw failures[0];
      })();
      return closing;
    },
  };
}
