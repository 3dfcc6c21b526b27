import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 5: what `findExecutions` filters on besides the status. Once shipped, never edit it:
 * add `0006-…` instead.
 *
 * The columns are written by the append's existing index upsert (no extra statement or round
 * trip): `flow`, `version` and `created_at_ms` from the append that starts the execution
 * (`execution.started` at sequence 0), `settled_as` from the terminal event of the append that
 * settles it. Existing rows are backfilled from the log in the same transaction, so an upgraded
 * schema answers like a new one.
 */
export const executionIndexDetailsMigration: PostgresMigration = {
  name: '0005-execution-index-details',
  version: 5,
  statements: (s) => [
    `ALTER TABLE ${s}.executions
      ADD COLUMN flow text COLLATE "C",
      ADD COLUMN version text COLLATE "C",
      ADD COLUMN settled_as text
        CHECK (settled_as IN ('completed', 'failed', 'cancelled', 'continued')),
      ADD COLUMN created_at_ms bigint`,

    // Sequence 0 gives the creation time and, when it is an execution.started, flow and version.
    // One probe of events_pkey per row; payload is JSON text written by the store.
    `UPDATE ${s}.executions x SET
      created_at_ms = e.at,
      flow = CASE WHEN e.type = 'execution.started'
                   AND jsonb_typeof(e.payload::jsonb -> 'flow') = 'string'
                  THEN e.payload::jsonb ->> 'flow' END,
      version = CASE WHEN e.type = 'execution.started'
                      AND jsonb_typeof(e.payload::jsonb -> 'version') = 'string'
                     THEN e.payload::jsonb ->> 'version' END
    FROM ${s}.events e
    WHERE e.execution_id = x.execution_id AND e.sequence = 0`,

    `UPDATE ${s}.executions SET created_at_ms = updated_at_ms WHERE created_at_ms IS NULL`,

    // A settled execution ended as its newest terminal event says.
    `UPDATE ${s}.executions x SET settled_as = (
      SELECT CASE e.type
               WHEN 'execution.completed' THEN 'completed'
               WHEN 'execution.failed' THEN 'failed'
               WHEN 'execution.cancelled' THEN 'cancelled'
               WHEN 'execution.continued_as_new' THEN 'continued'
             END
      FROM ${s}.events e
      WHERE e.execution_id = x.execution_id
        AND e.type IN ('execution.completed', 'execution.failed', 'execution.cancelled',
                       'execution.continued_as_new')
      ORDER BY e.sequence DESC
      LIMIT 1)
    WHERE x.status = 'settled'`,

    `ALTER TABLE ${s}.executions ALTER COLUMN created_at_ms SET NOT NULL`,

    // Serves findExecutions({ flow, … }): WHERE flow = $ AND execution_id > $ ORDER BY
    // execution_id; the other filters are checked on each row the index gives.
    `CREATE INDEX executions_flow_id_idx ON ${s}.executions (flow, execution_id)`,

    // Serves findExecutions({ status: 'completed' | 'failed' | 'cancelled' | 'continued' })
    // without a flow: WHERE settled_as = $ AND execution_id > $ ORDER BY execution_id, reading one
    // way of ending rather than every settled execution.
    `CREATE INDEX executions_settled_as_id_idx ON ${s}.executions (settled_as, execution_id)
      WHERE settled_as IS NOT NULL`,
  ],
};
