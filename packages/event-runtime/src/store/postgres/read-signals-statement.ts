import type { StoredSignal } from '../../envelope.js';
import { decodePayload } from '../../internal/json-codec.js';
import { type PgStatement, statementName } from './pg-statement.js';

/** A signals row as pg returns it (bigint columns arrive as strings). */
export interface PgSignalRow {
  execution_id: string;
  signal_id: string;
  name: string;
  payload: string;
  idempotency_key: string | null;
  at: string;
}

/** Converts a row to the signal callers see, decoding the payload text. */
export function signalFromPg(row: PgSignalRow): StoredSignal {
  return {
    executionId: row.execution_id,
    signalId: Number(row.signal_id),
    name: row.name,
    payload: decodePayload(row.payload),
    idempotencyKey: row.idempotency_key,
    at: Number(row.at),
  };
}

/** One execution's inbox after a signal id, in arrival order ($1 id, $2 after, $3 limit). Serves: signals_pkey. */
export function readSignalsStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'read-signals'),
    text: `SELECT execution_id, signal_id, name, payload, idempotency_key, at
FROM ${quotedSchema}.signals
WHERE execution_id = $1::text AND signal_id > $2::bigint
ORDER BY signal_id
LIMIT $3::bigint`,
  };
}
