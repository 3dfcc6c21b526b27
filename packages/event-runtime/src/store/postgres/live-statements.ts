import { type PgStatement, statementName } from './pg-statement.js';

/** The statements of `PostgresLiveStore`, built once per store for its schema. */
export interface LiveStatements {
  write: PgStatement;
  read: PgStatement;
  drop: PgStatement;
  prune: PgStatement;
}

/**
 * `write`: one chunk, unless its (execution, stream, attempt, offset) is stored; returns its
 * position when stored. Serves: live_chunks_key. `read`: a stream's chunks after a position.
 * Serves: live_chunks_stream. `drop`: a stream's chunks. Serves: live_chunks_stream. `prune`:
 * chunks written before a time. Serves: live_chunks_at.
 */
export function liveStatements(quotedSchema: string, schema: string): LiveStatements {
  const table = `${quotedSchema}.live_chunks`;
  return {
    write: {
      name: statementName(schema, 'live-write'),
      text: `INSERT INTO ${table} (execution_id, stream, attempt, text_offset, text, at_ms)
VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::text, $6::bigint)
ON CONFLICT (execution_id, stream, attempt, text_offset) DO NOTHING
RETURNING position`,
    },
    read: {
      name: statementName(schema, 'live-read'),
      text: `SELECT position, attempt, text_offset, text, at_ms FROM ${table}
WHERE execution_id = $1::text AND stream = $2::text AND position > $3::bigint
ORDER BY position LIMIT $4::int`,
    },
    drop: {
      name: statementName(schema, 'live-drop'),
      text: `DELETE FROM ${table} WHERE execution_id = $1::text AND stream = $2::text`,
    },
    prune: {
      name: statementName(schema, 'live-prune'),
      text: `WITH pruned AS (DELETE FROM ${table} WHERE at_ms < $1::bigint RETURNING 1)
SELECT count(*) AS pruned FROM pruned`,
    },
  };
}
