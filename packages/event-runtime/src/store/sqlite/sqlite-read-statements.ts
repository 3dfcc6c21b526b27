import type Database from 'better-sqlite3';
import type { StoredRow } from '../../internal/stored-row.js';

/** An event row as better-sqlite3 returns it. */
export interface SqliteEventRow {
  position: number;
  execution_id: string;
  sequence: number;
  type: string;
  payload: string;
  at: number;
  prev_hash: string | null;
  hash: string;
}

const rowColumns = 'position, execution_id, sequence, type, payload, at, prev_hash, hash';

/** One execution's events by sequence. Serves: loom_events_execution_sequence. */
const readSql =
  `SELECT ${rowColumns} FROM loom_events WHERE execution_id = ? AND sequence >= ? ` +
  'ORDER BY sequence LIMIT ?';

/** The whole log by position (the rowid: one writer at a time, so rowid order is commit order). */
const readAllSql = `SELECT ${rowColumns} FROM loom_events WHERE position > ? ORDER BY position LIMIT ?`;

/** The read statements. */
export interface SqliteReadStatements {
  read: Database.Statement<[string, number, number], SqliteEventRow>;
  readAll: Database.Statement<[number, number], SqliteEventRow>;
}

/** The read statements, prepared once per store. */
export function prepareReadStatements(db: Database.Database): SqliteReadStatements {
  return {
    read: db.prepare<[string, number, number], SqliteEventRow>(readSql),
    readAll: db.prepare<[number, number], SqliteEventRow>(readAllSql),
  };
}

/** An event row in the store-kit's stored form (payload still text). */
export function storedRowFromSqlite(raw: SqliteEventRow): StoredRow {
  return {
    executionId: raw.execution_id,
    sequence: raw.sequence,
    type: raw.type,
    at: raw.at,
    payloadText: raw.payload,
    position: raw.position,
    prevHash: raw.prev_hash,
    hash: raw.hash,
  };
}
