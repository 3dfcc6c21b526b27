import { type PgStatement, statementName } from './pg-statement.js';

/** The statements of `PostgresSnapshotStore`, built once per store for its schema. */
export interface SnapshotStatements {
  save: PgStatement;
  load: PgStatement;
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

/** Builds the snapshot statements of a (validated) schema. */
export function snapshotStatements(quotedSchema: string, schema: string): SnapshotStatements {
  return {
    save: saveStatement(quotedSchema, schema),
    load: loadStatement(quotedSchema, schema),
  };
}
