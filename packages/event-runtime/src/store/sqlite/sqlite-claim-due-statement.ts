import type Database from 'better-sqlite3';

/**
 * Flips up to `limit` suspended executions due at `nowMs` (oldest wake first) to running, in one
 * statement under SQLite's write lock: each is claimed once. Parameters: claimed-at, now, the
 * flows to claim (a JSON array of `[name, version]`, or null for every flow), limit. An execution
 * whose flow the index does not know (null) is claimed whatever the filter. `IS` compares
 * versions null-safely (an unversioned flow has version null).
 */
const claimDueSql =
  "UPDATE loom_executions SET status = 'running', wake_at_ms = NULL, updated_at_ms = @claimedAtMs " +
  'WHERE execution_id IN (SELECT d.execution_id FROM loom_executions d ' +
  "WHERE d.status = 'suspended' AND d.wake_at_ms <= @nowMs " +
  'AND (@flows IS NULL OR d.flow IS NULL OR EXISTS (SELECT 1 FROM json_each(@flows) f ' +
  "WHERE json_extract(f.value, '$[0]') = d.flow AND json_extract(f.value, '$[1]') IS d.version)) " +
  'ORDER BY d.wake_at_ms LIMIT @limit) ' +
  'RETURNING execution_id';

/** What the claimDue statement binds. */
export interface ClaimDueParameters {
  claimedAtMs: number;
  nowMs: number;
  /** JSON `[[name, version], …]`, or null for every flow. */
  flows: string | null;
  limit: number;
}

/** The claimDue statement, prepared once per store. */
export function prepareClaimDueStatement(
  db: Database.Database,
): Database.Statement<[ClaimDueParameters], { execution_id: string }> {
  return db.prepare<[ClaimDueParameters], { execution_id: string }>(claimDueSql);
}
