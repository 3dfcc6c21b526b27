/**
 * SQLite schema migrations: numbered, append-only, never edited once shipped. The version
 * applied is kept in `PRAGMA user_version`. Every index names the query it serves.
 */
export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

export const sqliteMigrations: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'event-log',
    sql: `
      -- position is the rowid: SQLite has one writer at a time, so rowid order is commit order,
      -- and readAll / subscribe page on it (WHERE position > ? ORDER BY position).
      CREATE TABLE loom_events (
        position     INTEGER PRIMARY KEY,
        execution_id TEXT    NOT NULL,
        sequence     INTEGER NOT NULL,
        type         TEXT    NOT NULL,
        payload      TEXT    NOT NULL,
        at           INTEGER NOT NULL,
        prev_hash    TEXT,
        hash         TEXT    NOT NULL
      );
      -- Serves read(executionId, fromSequence), the tail lookup in append, and refuses a
      -- duplicate (execution_id, sequence) even if a writer skipped the tail check.
      CREATE UNIQUE INDEX loom_events_execution_sequence ON loom_events (execution_id, sequence);
      CREATE TABLE loom_fences (
        execution_id TEXT    PRIMARY KEY,
        epoch        INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
];

/** The newest schema version this code knows. */
export const sqliteSchemaVersion = sqliteMigrations[sqliteMigrations.length - 1]?.version ?? 0;
