import type Database from 'better-sqlite3';

/**
 * Flips up to `limit` suspended executions due at `nowMs` (oldest wake first) to running, in one
 * statement under SQLite's write lock: each is claimed once. Parameters: claimed-at, now, limit.
 */
const claimDueSql =
  "UPDATE loom_executions SET status = 'running', wake_at_ms = NULL, updated_at_ms = ? " +
  'WHERE execution_id IN (SELECT execution_id FROM loom_executions ' +
  "WHERE status = 'suspended' AND wake_at_ms <= ? ORDER BY wake_at_ms LIMIT ?) " +
  'RETURNING execution_id';

/** The claimDue statement, prepared once per store. */
export function prepareClaimDueStatement(
  db: Database.Database,
): Database.Statement<[number, number, number], { execution_id: string }> {
  return db.prepare<[number, number, number], { execution_id: string }>(claimDueSql);
}
