import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 14, what a suspended execution waits for (ADR 0062), written by the append that
 * suspends it: `waiting_for`, bits of timer 1, signal 2, approval 4, question 8, child 16. NULL
 * when the writer did not say (every row written before this migration): a view then falls back
 * to `wake_at_ms` (a timer when set, some input when not); nothing is backfilled, the log is not
 * read. Once shipped, never edit it: add `0015-…` instead.
 */
export const waitingForMigration: PostgresMigration = {
  name: '0014-waiting-for',
  version: 14,
  statements: (s) => [
    `ALTER TABLE ${s}.executions ADD COLUMN waiting_for integer`,
    // Serves the runs page filtered by what a run waits for (@loom/view searchRuns, waiting =
    // timer, signal, approval, question, child or input: status = 'suspended' AND
    // (waiting_for & bit) <> 0, ORDER BY updated_at_ms DESC, execution_id DESC) and its counts: a
    // walk of the suspended rows alone, in page order, the bit test read from the index. Chosen
    // by the planner over executions_status_updated_id_idx (which serves it without this, as
    // SQLite's status index does there); over 100,000 runs, 5,000 suspended, a page of approvals
    // took 1.7 ms with it and 2.3 ms without, its counts 10.6 and 12.0 ms (ADR 0062).
    `CREATE INDEX executions_waiting_updated_idx
      ON ${s}.executions (updated_at_ms, execution_id, waiting_for, wake_at_ms)
      WHERE status = 'suspended'`,
  ],
};
