export { sqliteFailureKind } from './store/sqlite/sqlite-errors.js';
export {
  SqliteEventStore,
  type SqliteEventStoreOptions,
} from './store/sqlite/sqlite-event-store.js';
export {
  type SqliteMigration,
  sqliteMigrations,
  sqliteSchemaVersion,
} from './store/sqlite/sqlite-migrations.js';
