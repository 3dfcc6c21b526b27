import type Database from 'better-sqlite3';

/** The execution's last event, to check the next sequence and chain the hash. Serves: loom_events_execution_sequence. */
const tailSql =
  'SELECT sequence, hash FROM loom_events WHERE execution_id = ? ORDER BY sequence DESC LIMIT 1';

/** One event; its rowid is its position. */
const insertSql =
  'INSERT INTO loom_events (execution_id, sequence, type, payload, at, prev_hash, hash) ' +
  'VALUES (?, ?, ?, ?, ?, ?, ?)';

/**
 * The execution index row an append writes. flow, version, created_at_ms and started_by come from
 * the append that starts the execution and are kept by later status changes (they are not in the
 * DO UPDATE). A status change clears claimed_by (a claim's mark lasts until then: ADR 0063).
 * waiting_for is a suspension's wait kinds as bits (null: not said, or not suspended).
 * The last two parameters are a suspension's `wakeOnSignalsAfter` (null without one), twice: with
 * a signal newer than it in the inbox, the suspension is due at once, its append's time (ADR
 * 0033). One writer at a time (the append's IMMEDIATE transaction), so no signal can land between
 * this look and the write. Serves: loom_signals primary key (one probe).
 */
const upsertExecutionSql =
  'INSERT INTO loom_executions (execution_id, status, wake_at_ms, updated_at_ms, ' +
  'settled_as, flow, version, created_at_ms, started_by, waiting_for) ' +
  'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (execution_id) DO UPDATE SET status = excluded.status, ' +
  'waiting_for = excluded.waiting_for, claimed_by = NULL, ' +
  'wake_at_ms = CASE WHEN ? IS NOT NULL AND EXISTS (SELECT 1 FROM loom_signals s ' +
  'WHERE s.execution_id = excluded.execution_id AND s.signal_id > ?) ' +
  'THEN min(coalesce(excluded.wake_at_ms, excluded.updated_at_ms), excluded.updated_at_ms) ' +
  'ELSE excluded.wake_at_ms END, updated_at_ms = excluded.updated_at_ms, ' +
  'settled_as = excluded.settled_as';

/** The upsert's parameters: the row, then the suspension's signal guard twice. */
type UpsertExecutionArgs = [
  string,
  string,
  number | null,
  number,
  string | null,
  string | null,
  string | null,
  number,
  string | null,
  number | null,
  number | null,
  number | null,
];

/** The statements of an append. */
export interface SqliteAppendStatements {
  tail: Database.Statement<[string], { sequence: number; hash: string }>;
  insert: Database.Statement<[string, number, string, string, number, string | null, string]>;
  upsertExecution: Database.Statement<UpsertExecutionArgs>;
}

/** The statements of an append, prepared once per store. */
export function prepareAppendStatements(db: Database.Database): SqliteAppendStatements {
  return {
    tail: db.prepare<[string], { sequence: number; hash: string }>(tailSql),
    insert: db.prepare<[string, number, string, string, number, string | null, string]>(insertSql),
    upsertExecution: db.prepare<UpsertExecutionArgs>(upsertExecutionSql),
  };
}
