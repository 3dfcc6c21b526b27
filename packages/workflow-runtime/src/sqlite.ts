/**
 * `@loom/workflow-runtime/sqlite`: open a SQLite backend for `createRuntime` without importing
 * `@loom/event-runtime` yourself. A separate entry so that only its users load better-sqlite3
 * (an optional peer dependency).
 */
export { type OpenSqliteOptions, openSqlite, type SqliteBackend } from '@loom/event-runtime/sqlite';
