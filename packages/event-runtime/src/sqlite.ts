export {
  type OpenSqliteOptions,
  openSqlite,
  type SqliteBackend,
} from './store/sqlite/open-sqlite.js';
export { sqliteFailureKind } from './store/sqlite/sqlite-errors.js';
export {
  SqliteEventStore,
  type SqliteEventStoreOptions,
} from './store/sqlite/sqlite-event-store.js';
export {
  SqliteLeaseStore,
  type SqliteLeaseStoreOptions,
} from './store/sqlite/sqlite-lease-store.js';
export { SqliteLiveStore, type SqliteLiveStoreOptions } from './store/sqlite/sqlite-live-store.js';
export {
  type SqliteMigration,
  sqliteMigrations,
  sqliteSchemaVersion,
} from './store/sqlite/sqlite-migrations.js';
export {
  SqliteQueueStore,
  type SqliteQueueStoreOptions,
} from './store/sqlite/sqlite-queue-store.js';
export {
  SqliteSnapshotStore,
  type SqliteSnapshotStoreOptions,
} from './store/sqlite/sqlite-snapshot-store.js';
