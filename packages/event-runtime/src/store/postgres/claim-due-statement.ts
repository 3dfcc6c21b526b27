import { type PgStatement, statementName } from './pg-statement.js';

/**
 * `claimDue`: flips up to `$3` suspended executions due at `$2` (`wake_at_ms <= $2`, oldest wake
 * first) to `running` and returns their ids; `$1` is the store's clock for `updated_at_ms`.
 *
 * `FOR UPDATE SKIP LOCKED` lets several nodes claim at once without queueing: each takes rows
 * the others have not locked, and a row another claimer committed meanwhile is re-checked on its
 * latest version (READ COMMITTED) and dropped, as it is no longer suspended. So every due
 * execution goes to exactly one claimer. The candidates are collected with `= ANY (ARRAY(…))`
 * rather than `IN (…)`: the array is an InitPlan, run exactly once, and the update then probes
 * an index for those ids. With `IN`, the generic plan of the prepared statement hashes a
 * sequential scan of the whole index table against the candidates, and nothing would forbid a
 * plan that re-runs a LIMIT … SKIP LOCKED subquery (which could claim more than `$3`).
 *
 * `$6` is the claiming node, recorded in `claimed_by` until the row's next status change (null:
 * not recorded): recovery treats a claimed execution nobody leased as the claimer's (ADR 0063).
 *
 * `$4`/`$5` (flow names and versions, side by side; null for every flow) keep to the executions
 * of flows the claimer runs, and to those whose flow the index does not know: a node never claims
 * what it cannot run, so the execution stays due for one that can. `IS NOT DISTINCT FROM`
 * matches an unversioned flow's null version.
 *
 * Serves: executions_status_wake_idx (candidates, in wake order, no sort; see migration 3), then
 * executions_pkey or executions_status_id_idx (the update's `execution_id = ANY`).
 */
export function claimDueStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'claim-due'),
    text: `UPDATE ${quotedSchema}.executions x
SET status = 'running', wake_at_ms = NULL, updated_at_ms = $1::bigint, claimed_by = $6::text
WHERE x.execution_id = ANY (ARRAY(
    SELECT d.execution_id FROM ${quotedSchema}.executions d
    WHERE d.status = 'suspended' AND d.wake_at_ms <= $2::bigint
      AND ($4::text[] IS NULL OR d.flow IS NULL OR EXISTS (
        SELECT 1 FROM unnest($4::text[], $5::text[]) AS f(name, version)
        WHERE f.name = d.flow AND f.version IS NOT DISTINCT FROM d.version))
    ORDER BY d.wake_at_ms
    LIMIT $3::bigint
    FOR UPDATE SKIP LOCKED
  ))
  AND x.status = 'suspended'
RETURNING x.execution_id`,
  };
}

/**
 * `unclaimDue`: flips the executions `$3` (ids) that are still `running` back to `suspended`, due
 * at `$2`, and returns their ids; `$1` is the store's clock for `updated_at_ms`. The row lock
 * orders it with an append to the same execution: under READ COMMITTED an update that waited for
 * one re-checks `status` on the row the append committed (a settled execution stays settled).
 *
 * Serves: executions_pkey (`execution_id = ANY`).
 */
export function unclaimDueStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'unclaim-due'),
    text: `UPDATE ${quotedSchema}.executions
SET status = 'suspended', wake_at_ms = $2::bigint, updated_at_ms = $1::bigint, claimed_by = NULL
WHERE execution_id = ANY ($3::text[]) AND status = 'running'
RETURNING execution_id`,
  };
}
