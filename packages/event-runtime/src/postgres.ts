/**
 * `@loom/event-runtime/postgres`: the Postgres event store. A separate entry so that a user of
 * the memory or SQLite stores never loads `pg` (an optional peer dependency).
 */
export {
  migrate,
  type PostgresMigrateOptions,
  type PostgresMigrateResult,
} from './store/postgres/migrate.js';
export { latestSchemaVersion } from './store/postgres/migrations/migration-list.js';
export {
  type OpenPostgresOptions,
  openPostgres,
  type PostgresBackend,
} from './store/postgres/open-postgres.js';
export { createPostgresPool, type PgConnectionOptions } from './store/postgres/pg-pool.js';
export {
  PostgresEventStore,
  type PostgresEventStoreStats,
} from './store/postgres/postgres-event-store.js';
export {
  PostgresLeaseStore,
  type PostgresLeaseStoreOptions,
} from './store/postgres/postgres-lease-store.js';
export {
  liveChannelName,
  PostgresLiveStore,
  type PostgresLiveStoreOptions,
} from './store/postgres/postgres-live-store.js';
export {
  PostgresQueueStore,
  type PostgresQueueStoreOptions,
} from './store/postgres/postgres-queue-store.js';
export {
  PostgresSnapshotStore,
  type PostgresSnapshotStoreOptions,
} from './store/postgres/postgres-snapshot-store.js';
export type { PostgresEventStoreOptions } from './store/postgres/postgres-store-options.js';
export {
  pollIntervalMsMax,
  pollIntervalMsMin,
  type StoreNotifications,
} from './store/postgres/store-notifications.js';
