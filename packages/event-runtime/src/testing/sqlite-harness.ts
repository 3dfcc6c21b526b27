import Database from 'better-sqlite3';
import type { EventStore } from '../event-store.js';
import { SqliteEventStore } from '../store/sqlite/sqlite-event-store.js';
import { SqliteLeaseStore } from '../store/sqlite/sqlite-lease-store.js';
import { SqliteSnapshotStore } from '../store/sqlite/sqlite-snapshot-store.js';
import type { DurableHarness, DurableHarnessOptions } from './durable-harness.js';
import type { ConformanceHarness } from './event-store-conformance.js';
import { ManualClock } from './manual-clock.js';

/**
 * The stores of a fresh SQLite file at `path` (migrated) on a manual clock, for
 * `runtimeConformance`: the event store (decorated by `wrap`), the lease and snapshot stores on
 * its connection, and a row count through a second connection.
 *
 * @example
 * runtimeConformance('my decorator over sqlite', async () =>
 *   sqliteRuntimeHarness(join(dir, `${ulid()}.db`), { wrap: (store) => new MyDecorator(store) }),
 * );
 */
export async function sqliteRuntimeHarness(
  path: string,
  options: DurableHarnessOptions<SqliteEventStore> = {},
): Promise<DurableHarness<SqliteEventStore>> {
  const clock = new ManualClock();
  const inner = SqliteEventStore.open({ path, migrate: true, clock });
  const store = options.wrap === undefined ? inner : await options.wrap(inner, clock);
  const side = new Database(path);
  const count = side.prepare('SELECT count(*) AS n FROM loom_events WHERE execution_id = ?');
  return {
    inner,
    store,
    leases: new SqliteLeaseStore(inner.database, { clock }),
    snapshots: new SqliteSnapshotStore(inner.database),
    clock,
    countRows: async (executionId) => (count.get(executionId) as { n: number }).n,
    ...(options.snapshotsPaired === undefined ? {} : { snapshotsPaired: options.snapshotsPaired }),
    close: async () => {
      side.close();
      await store.close();
    },
  };
}

/**
 * A fresh SQLite file at `path` (migrated) for `eventStoreConformance`: the store (decorated by
 * `wrap`), peers on their own connections (decorated the same way), and row counts and tampering
 * through a side connection.
 *
 * @example
 * eventStoreConformance('my decorator over sqlite', async () =>
 *   sqliteEventStoreHarness(join(dir, `${ulid()}.db`), { wrap: (store) => new MyDecorator(store) }),
 * );
 */
export function sqliteEventStoreHarness(
  path: string,
  options: { wrap?: (store: SqliteEventStore) => EventStore } = {},
): ConformanceHarness {
  const wrap = options.wrap ?? ((store: SqliteEventStore) => store);
  const store = wrap(SqliteEventStore.open({ path, migrate: true }));
  const side = new Database(path);
  const count = side.prepare('SELECT count(*) AS n FROM loom_events WHERE execution_id = ?');
  const overwrite = side.prepare(
    'UPDATE loom_events SET payload = ? WHERE execution_id = ? AND sequence = ?',
  );
  const peers: EventStore[] = [];
  return {
    store,
    openPeer: async () => {
      const peer = wrap(SqliteEventStore.open({ path }));
      peers.push(peer);
      return peer;
    },
    countRows: async (executionId) => (count.get(executionId) as { n: number }).n,
    tamper: async (executionId, sequence, payloadText) => {
      overwrite.run(payloadText, executionId, sequence);
    },
    close: async () => {
      await Promise.all(peers.map((peer) => peer.close()));
      await store.close();
      side.close();
    },
  };
}
