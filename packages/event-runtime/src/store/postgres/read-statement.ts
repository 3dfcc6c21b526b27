import type { StoredRow } from '../../internal/stored-row.js';
import { type PgStatement, statementName } from './pg-statement.js';

/** An events row as pg returns it (bigint columns arrive as strings). */
export interface PgEventRow {
  execution_id: string;
  sequence: string;
  type: string;
  payload: string;
  at: string;
  position: string;
  prev_hash: string | null;
  hash: string;
}

/** The columns of an event, in {@link PgEventRow}'s shape. */
export const eventColumns = 'execution_id, sequence, type, payload, at, position, prev_hash, hash';

/** Converts a pg row to the backend-neutral {@link StoredRow} (payload stays text). */
export function rowFromPg(row: PgEventRow): StoredRow {
  return {
    executionId: row.execution_id,
    sequence: Number(row.sequence),
    type: row.type,
    at: Number(row.at),
    payloadText: row.payload,
    position: Number(row.position),
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

/** One execution's events from a sequence on, in order ($1 id, $2 from, $3 limit). Serves: events_pkey. */
export function readStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'read'),
    text: `SELECT ${eventColumns} FROM ${quotedSchema}.events
WHERE execution_id = $1::text AND sequence >= $2::bigint
ORDER BY sequence
LIMIT $3::bigint`,
  };
}
