import type Database from 'better-sqlite3';

/** Whether the execution exists (its sequence 0 is in the log). */
const startedSql = 'SELECT 1 AS one FROM loom_events WHERE execution_id = ? AND sequence = 0';

/** The execution's status in the index. */
const statusSql = 'SELECT status FROM loom_executions WHERE execution_id = ?';

/** A signal already sent with this idempotency key. */
const signalByKeySql =
  'SELECT signal_id FROM loom_signals WHERE execution_id = ? AND idempotency_key = ?';

/** The inbox's next signal id (under the write lock, so no two senders get the same). */
const nextSignalIdSql =
  'SELECT coalesce(max(signal_id), 0) + 1 AS next FROM loom_signals WHERE execution_id = ?';

const insertSignalSql =
  'INSERT INTO loom_signals (execution_id, signal_id, name, payload, idempotency_key, at) ' +
  'VALUES (?, ?, ?, ?, ?, ?)';

/** A signal to a suspended execution makes it due now, so `claimDue` picks it up. */
const wakeSuspendedSql =
  "UPDATE loom_executions SET wake_at_ms = ? WHERE execution_id = ? AND status = 'suspended'";

/** The inbox in arrival order. */
const readSignalsSql =
  'SELECT execution_id, signal_id, name, payload, idempotency_key, at FROM loom_signals ' +
  'WHERE execution_id = ? AND signal_id > ? ORDER BY signal_id LIMIT ?';

/** A signal row as better-sqlite3 returns it. */
export interface SqliteSignalRow {
  execution_id: string;
  signal_id: number;
  name: string;
  payload: string;
  idempotency_key: string | null;
  at: number;
}

/** The inbox statements. */
export interface SqliteSignalStatements {
  started: Database.Statement<[string], { one: number }>;
  status: Database.Statement<[string], { status: string }>;
  signalByKey: Database.Statement<[string, string], { signal_id: number }>;
  nextSignalId: Database.Statement<[string], { next: number }>;
  insertSignal: Database.Statement<[string, number, string, string, string | null, number]>;
  wakeSuspended: Database.Statement<[number, string]>;
  readSignals: Database.Statement<[string, number, number], SqliteSignalRow>;
}

/** The inbox statements, prepared once per store. */
export function prepareSignalStatements(db: Database.Database): SqliteSignalStatements {
  return {
    started: db.prepare<[string], { one: number }>(startedSql),
    status: db.prepare<[string], { status: string }>(statusSql),
    signalByKey: db.prepare<[string, string], { signal_id: number }>(signalByKeySql),
    nextSignalId: db.prepare<[string], { next: number }>(nextSignalIdSql),
    insertSignal:
      db.prepare<[string, number, string, string, string | null, number]>(insertSignalSql),
    wakeSuspended: db.prepare<[number, string]>(wakeSuspendedSql),
    readSignals: db.prepare<[string, number, number], SqliteSignalRow>(readSignalsSql),
  };
}
