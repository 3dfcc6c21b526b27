import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 10: the orders of the operator's runs page (`@loom/view` `searchRuns`, the
 * dashboard): newest first, paged by keyset (`WHERE (updated_at_ms, execution_id) < ($1, $2)
 * ORDER BY updated_at_ms DESC, execution_id DESC LIMIT $3`), so the first and every next page read
 * only their rows, never an OFFSET. Once shipped, never edit it: add `0011-…` instead.
 *
 * Each status change already rewrites the row's `(status, execution_id)` entry; these add up to
 * four entries per change (measured in docs/benchmarks.md, the runs page).
 */
export const runsPageOrderMigration: PostgresMigration = {
  name: '0010-runs-page-order',
  version: 10,
  statements: (s) => [
    // Serves the page without a status filter, newest (or oldest) change first.
    `CREATE INDEX executions_updated_id_idx ON ${s}.executions (updated_at_ms, execution_id)`,
    // Serves the page of running, suspended or settled runs (status = $).
    `CREATE INDEX executions_status_updated_id_idx
      ON ${s}.executions (status, updated_at_ms, execution_id)`,
    // Serves the page of one way of ending (settled_as = $: completed, failed, …).
    `CREATE INDEX executions_settled_as_updated_id_idx
      ON ${s}.executions (settled_as, updated_at_ms, execution_id) WHERE settled_as IS NOT NULL`,
    // Serves the page sorted by creation.
    `CREATE INDEX executions_created_id_idx ON ${s}.executions (created_at_ms, execution_id)`,
  ],
};
