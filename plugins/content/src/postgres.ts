/**
 * `@loom/plugin-content/postgres`: the content store in a Postgres table. A subpath, so a user
 * who never opens Postgres never loads `pg`.
 */
export {
  PostgresContentStore,
  type PostgresContentStoreOptions,
} from './postgres-content-store.js';
