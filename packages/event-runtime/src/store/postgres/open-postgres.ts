import type { Backend } from '../../backend.js';
import { resolvePool } from './pg-pool.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { PostgresLeaseStore } from './postgres-lease-store.js';
import { PostgresLiveStore } from './postgres-live-store.js';
import { PostgresQueueStore } from './postgres-queue-store.js';
import { PostgresSnapshotStore } from './postgres-snapshot-store.js';
import type { PostgresEventStoreOptions } from './postgres-store-options.js';
import { liveStoreNotifications } from './store-notifications.js';

/**
 * Options of {@link openPostgres}: where to connect (`connectionString`, a host list as a
 * multi-host `connectionString` or `hosts` whose read-write server is found on connect and after
 * a failover, or a `pool` you own and end yourself), the schema (default `loom`), and the event store's options (`clock` and
 * `readOnly` apply to every store).
 */
export interface OpenPostgresOptions extends PostgresEventStoreOptions {
  /** Create or upgrade the schema's tables while opening (same as calling `migrate()`). Default false. */
  migrate?: boolean;
}

/** The Postgres {@link Backend}: every store on one schema and one pool. */
export interface PostgresBackend extends Backend {
  readonly kind: 'postgres';
  readonly events: PostgresEventStore;
  readonly leases: PostgresLeaseStore;
  readonly snapshots: PostgresSnapshotStore;
  readonly queues: PostgresQueueStore;
  readonly live: PostgresLiveStore;
  /** The schema holding Loom's tables. */
  readonly schema: string;
}

/**
 * Opens every store Loom keeps in a Postgres schema (the event log, leases, snapshots, queues)
 * on one pool, checking the schema version once per store. Opening never creates anything unless
 * `migrate: true` (or call `migrate()`, e.g. at deploy time). `close()` closes the stores beside
 * the log, then the log (its LISTEN connection), then ends the pool, if this call created it.
 *
 * Error codes: `INVALID_ARGUMENT` (a connection string that is not a PostgreSQL URL, a bad host
 * list, a bad schema name, both `pool` and `connectionString`), `STORE_UNAVAILABLE` (the server
 * cannot be reached or refused the login, or no listed host is a read-write primary),
 * `SCHEMA_TOO_NEW`, and from `migrate: true` the errors of `migrate()`. Nothing is left open
 * when it throws.
 *
 * @example
 * import { openPostgres } from '@loom/event-runtime/postgres';
 * const backend = await openPostgres({ connectionString: 'postgres://localhost/app', schema: 'loom', migrate: true });
 * // createRuntime({ backend, flows: [order] }) in @loom/workflow-runtime
 * await backend.close();
 */
export async function openPostgres(options: OpenPostgresOptions = {}): Promise<PostgresBackend> {
  const {
    migrate,
    connectionString,
    connectTimeoutMs,
    hosts,
    pool: _callerPool,
    ...rest
  } = options;
  const { pool, owned } = resolvePool(options);
  const on = {
    pool,
    ...(rest.schema === undefined ? {} : { schema: rest.schema }),
    ...(rest.readOnly === undefined ? {} : { readOnly: rest.readOnly }),
  };
  const withClock = { ...on, ...(rest.clock === undefined ? {} : { clock: rest.clock }) };
  const opened: Array<{ close(): Promise<void> }> = [];
  const endPool = async () => {
    if (owned) await pool.end().catch(() => undefined);
  };
  let events: PostgresEventStore;
  let leases: PostgresLeaseStore;
  let snapshots: PostgresSnapshotStore;
  let queues: PostgresQueueStore;
  let live: PostgresLiveStore;
  try {
    events = await PostgresEventStore.open({ ...rest, pool });
    opened.push(events);
    if (migrate === true) await events.migrate();
    leases = await PostgresLeaseStore.open(withClock);
    opened.push(leases);
    snapshots = await PostgresSnapshotStore.open(on);
    opened.push(snapshots);
    queues = await PostgresQueueStore.open(withClock);
    opened.push(queues);
    live = await PostgresLiveStore.open({ ...withClock, ...liveStoreNotifications(rest) });
  } catch (error) {
    for (const store of opened.reverse()) await store.close().catch(() => undefined);
    await endPool();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    kind: 'postgres',
    schema: events.schema,
    events,
    leases,
    snapshots,
    queues,
    live,
    migrate: async () => {
      await events.migrate();
    },
    close: () => {
      closing ??= (async () => {
        await live.close();
        await queues.close();
        await snapshots.close();
        await leases.close();
        await events.close();
        // The pool last: every store above borrowed it.
        await endPool();
      })();
      return closing;
    },
  };
}
