import type { Backend } from '../../backend.js';
import { SqliteEventStore, type SqliteEventStoreOptions } from './sqlite-event-store.js';
import { SqliteLeaseStore } from './sqlite-lease-store.js';
import { SqliteLiveStore } from './sqlite-live-store.js';
import { SqliteQueueStore } from './sqlite-queue-store.js';
import { SqliteSnapshotStore } from './sqlite-snapshot-store.js';

/**
 * Options of {@link openSqlite}: where the file is and how to open it (those of
 * `SqliteEventStore.open`; `clock` and `readOnly` apply to every store).
 */
export type OpenSqliteOptions = SqliteEventStoreOptions;

/** The SQLite {@link Backend}: every store on one file and one better-sqlite3 handle. */
export interface SqliteBackend extends Backend {
  readonly kind: 'sqlite';
  readonly events: SqliteEventStore;
  readonly leases: SqliteLeaseStore;
  readonly snapshots: SqliteSnapshotStore;
  readonly queues: SqliteQueueStore;
  readonly live: SqliteLiveStore;
}

/**
 * Opens (and for a writable open, creates) a SQLite file with every store Loom keeps in it: the
 * event log, leases, snapshots, queues and the live channel, sharing one handle and its transactions. With
 * `migrate: true` the tables are created or upgraded while opening (else call `migrate()`).
 * `close()` closes the stores beside the log, then the log, which closes the file once.
 *
 * Error codes: `STORE_UNAVAILABLE` (the file cannot be opened), `SCHEMA_TOO_NEW`,
 * `STORE_READ_ONLY` (migrate on a read-only open).
 *
 * @example
 * import { openSqlite } from '@loom/event-runtime/sqlite';
 * const backend = openSqlite({ path: 'loom.db', migrate: true });
 * // createRuntime({ backend, flows: [order] }) in @loom/workflow-runtime
 * await backend.close();
 */
export function openSqlite(options: OpenSqliteOptions): SqliteBackend {
  const events = SqliteEventStore.open(options);
  const shared = {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
  };
  const leases = new SqliteLeaseStore(events.database, shared);
  const snapshots = new SqliteSnapshotStore(
    events.database,
    options.readOnly === undefined ? {} : { readOnly: options.readOnly },
  );
  const queues = new SqliteQueueStore(events.database, shared);
  const live = new SqliteLiveStore(events.database, shared);
  let closing: Promise<void> | undefined;
  return {
    kind: 'sqlite',
    events,
    leases,
    snapshots,
    queues,
    live,
    migrate: () => events.migrate(),
    close: () => {
      closing ??= (async () => {
        await live.close();
        await queues.close();
        await snapshots.close();
        await leases.close();
        // The event store owns the handle the others borrowed: it closes the file, once.
        await events.close();
      })();
      return closing;
    },
  };
}
