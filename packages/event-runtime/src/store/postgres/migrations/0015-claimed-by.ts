import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 15, the node whose `claimDue` flipped a suspended execution to running (ADR 0063):
 * `claimed_by`, written by the claim and cleared by the row's next status change (an append's
 * upsert, `unclaimDue`). Recovery treats a claimed execution nobody leased as the claimer's, so a
 * claim whose answer was lost (the primary failed over after the commit) is taken at once by the
 * claimer, or by anyone once the claimer is dead. NULL on older rows: recovered as before.
 * Once shipped, never edit it: add `0016-…` instead.
 */
export const claimedByMigration: PostgresMigration = {
  name: '0015-claimed-by',
  version: 15,
  statements: (s) => [
    // No index: recovery reads it on the running rows it already pages through
    // (executions_status_id_idx).
    `ALTER TABLE ${s}.executions ADD COLUMN claimed_by text COLLATE "C"`,
  ],
};
