/**
 * `@loom/plugin-content/sqlite`: the content store in a SQLite file. A subpath, so a user who
 * never opens SQLite never loads `better-sqlite3`.
 */
export { SqliteContentStore, type SqliteContentStoreOptions } from './sqlite-content-store.js';
