import { type PgStatement, statementName } from './pg-statement.js';

/** The hash of one event, to chain an append after it (cold tail cache). Serves: events_pkey. */
export function hashAtStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'hash-at'),
    text: `SELECT hash FROM ${quotedSchema}.events WHERE execution_id = $1::text AND sequence = $2::bigint`,
  };
}

/**
 * The execution's next sequence (0 when it has none), for `SEQUENCE_CONFLICT`'s `expected`.
 * Serves: a backward scan of events_pkey.
 */
export function nextSequenceStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'next-sequence'),
    text: `SELECT coalesce(max(sequence) + 1, 0) AS next FROM ${quotedSchema}.events WHERE execution_id = $1::text`,
  };
}
