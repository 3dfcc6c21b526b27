import { type PgStatement, statementName } from './pg-statement.js';

/** Every table keyed by execution id that prune empties besides the log and the index. */
const otherTables = ['fences', 'signals', 'snapshots', 'leases', 'live_chunks'] as const;

/**
 * `prune`: chooses up to `$3` settled executions whose status last changed before `$1` (only the
 * ids `$2` when it is not null), in id order, and deletes their events, index rows and every
 * other row keyed by their id in one statement (one transaction); returns each one's event count
 * and last hash. `FOR UPDATE SKIP LOCKED` on the index rows: two prunes at once take disjoint
 * executions, and an index row another writer holds is left for the next call. Positions are an
 * identity column, never reused, so a subscriber's cursor stays valid.
 *
 * Serves: executions_pkey (`execution_id = ANY`, id order) or the status index, the settled time
 * checked on each row; every delete through its table's primary key (or, for live chunks,
 * live_chunks_stream (execution_id, …)).
 */
export function pruneStatement(quotedSchema: string, schema: string): PgStatement {
  const deletes = otherTables
    .map(
      (table) => `, removed_${table} AS (
  DELETE FROM ${quotedSchema}.${table} t USING chosen c WHERE t.execution_id = c.execution_id
)`,
    )
    .join('');
  return {
    name: statementName(schema, 'prune'),
    text: `WITH chosen AS (
  SELECT x.execution_id FROM ${quotedSchema}.executions x
  WHERE x.status = 'settled' AND x.updated_at_ms < $1::bigint
    AND ($2::text[] IS NULL OR x.execution_id = ANY ($2::text[]))
  ORDER BY x.execution_id
  LIMIT $3::bigint
  FOR UPDATE SKIP LOCKED
), removed_events AS (
  DELETE FROM ${quotedSchema}.events e USING chosen c WHERE e.execution_id = c.execution_id
  RETURNING e.execution_id, e.sequence, e.hash
), removed_index AS (
  DELETE FROM ${quotedSchema}.executions x USING chosen c WHERE x.execution_id = c.execution_id
)${deletes}
SELECT DISTINCT ON (execution_id) execution_id, sequence + 1 AS events, hash AS last_hash
FROM removed_events
ORDER BY execution_id, sequence DESC`,
  };
}
