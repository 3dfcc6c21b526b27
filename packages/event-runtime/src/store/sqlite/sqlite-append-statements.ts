import type Database from 'better-sqlite3';

/** The execution's last event, to check the next sequence and chain the hash. Serves: loom_events_execution_sequence. */
const tailSql =
  'SELECT sequence, hash FROM loom_events WHERE execution_id = ? ORDER BY sequence DESC LIMIT 1';

/** One event; its rowid is its position. */
const insertSql =
  'INSERT INTO loom_events (execution_id, sequence, type, payload, at, prev_hash, hash) ' +
  'VALUES (?, ?, ?, ?, ?, ?, ?)';

/**
 * The execution index row an append writes. flow, version and created_at_ms come from the append
 * that starts the execution and are kept by later status changes (they are not in the DO UPDATE).
 */
const upsertExecutionSql =
  'INSERT INTO loom_executions (execution_id, status, wake_at_ms, updated_at_ms, ' +
  'settled_as, flow, version, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (execution_id) DO UPDATE SET status = excluded.status, ' +
  'wake_at_ms = excluded.wake_at_ms, updated_at_ms = excluded.updated_at_ms, ' +
  'settled_as = excluded.settled_as';

/** The statements of an append. */
export interface SqliteAppendStatements {
  tail: Database.Statement<[string], { sequence: number; hash: string }>;
  insert: Database.Statement<[string, number, string, string, number, string | null, string]>;
  upsertExecution: Database.Statement<
    [string, string, number | null, number, string | null, string | null, string | null, number]
  >;
}

/** The statements of an append, prepared once per store. */
export function prepareAppendStatements(db: Database.Database): SqliteAppendStatements {
  return {
    tail: db.prepare<[string], { sequence: number; hash: string }>(tailSql),
    insert: db.prepare<[string, number, string, string, number, string | null, string]>(insertSql),
    upsertExecution:
      db.prepare<
        [string, string, number | null, number, string | null, string | null, string | null, number]
      >(upsertExecutionSql),
  };
}
