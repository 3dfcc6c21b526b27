import { type PgStatement, statementName } from './pg-statement.js';

/** The statements of `PostgresSnapshotStore`, built once per store for its schema. */
export interface SnapshotStatements {
  save: PgStatement;
  load: PgStatement;
  loadWithTail: PgStatement;
}

/**
 * Insert, or overwrite only with a strictly newer sequence. ON CONFLICT locks the stored row
 * before comparing, so racing savers cannot move the snapshot backwards. `$1` execution id,
 * `$2` sequence, `$3` state (exact JSON text), `$4` at. Serves: snapshots_pkey.
 */
function saveStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'snapshot-save'),
    text: `INSERT INTO ${quotedSchema}.snapshots AS s (execution_id, sequence, state, at)
VALUES ($1::text, $2::bigint, $3::text, $4::bigint)
ON CONFLICT (execution_id) DO UPDATE
  SET sequence = excluded.sequence, state = excluded.state, at = excluded.at
  WHERE excluded.sequence > s.sequence`,
  };
}

/** The stored snapshot of one execution. Serves: snapshots_pkey. */
function loadStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'snapshot-load'),
    text: `SELECT sequence, state, at FROM ${quotedSchema}.snapshots WHERE execution_id = $1::text`,
  };
}

/**
 * The stored snapshot of one execution and the events after it (from sequence 0 without one) in
 * one statement: the snapshot row (kind 's', state in `payload`), then up to `$2` event rows
 * (kind 'e'). `$1` execution id. Serves: snapshots_pkey, events_pkey.
 */
function loadWithTailStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'snapshot-load-with-tail'),
    text: `WITH s AS (
  SELECT sequence, state, at FROM ${quotedSchema}.snapshots WHERE execution_id = $1::text
)
SELECT 's' AS kind, $1::text AS execution_id, sequence, NULL::text AS type, state AS payload, at,
       NULL::bigint AS position, NULL::text AS prev_hash, NULL::text AS hash
FROM s
UNION ALL
(SELECT 'e', e.execution_id, e.sequence, e.type, e.payload, e.at, e.position, e.prev_hash, e.hash
 FROM ${quotedSchema}.events e
 WHERE e.execution_id = $1::text
   AND e.sequence > COALESCE((SELECT sequence FROM s), -1)
 ORDER BY e.sequence
 LIMIT $2::bigint)`,
  };
}

/** Builds the snapshot statements of a (validated) schema. */
export function snapshotStatements(quotedSchema: string, schema: string): SnapshotStatements {
  return {
    save: saveStatement(quotedSchema, schema),
    load: loadStatement(quotedSchema, schema),
    loadWithTail: loadWithTailStatement(quotedSchema, schema),
  };
}
