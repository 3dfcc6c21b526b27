import type Database from 'better-sqlite3';

/**
 * Flips up to `limit` suspended executions due at `nowMs` (oldest wake first) to running, in one
 * statement under SQLite's write lock: each is claimed once, its claimer recorded in `claimed_by`
 * (null when not given; ADR 0063). Parameters: claimed-at, claimer, now, the
 * flows to claim (a JSON array of `[name, version]`, or null for every flow), limit. An execution
 * whose flow the index does not know (null) is claimed whatever the filter. `IS` compares
 * versions null-safely (an unversioned flow has version null).
 */
const claimDueSql =
  "UPDATE loom_executions SET status = 'running', wake_at_ms = NULL, updated_at_ms = @claimedAtMs, " +
  'claimed_by = @claimedBy ' +
  'WHERE execution_id IN (SELECT d.execution_id FROM loom_executions d ' +
  "WHERE d.status = 'suspended' AND d.wake_at_ms <= @nowMs " +
  'AND (@flows IS NULL OR d.flow IS NULL OR EXISTS (SELECT 1 FROM json_each(@flows) f ' +
  "WHERE json_extract(f.value, '$[0]') = d.flow AND json_extract(f.value, '$[1]') IS d.version)) " +
  'ORDER BY d.wake_at_ms LIMIT @limit) ' +
  'RETURNING execution_id';

/** What the claimDue statement binds. */
export interface ClaimDueParameters {
  claimedAtMs: number;
  /** The claiming node (null: not recorded). */
  claimedBy: string | null;
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

/**
 * `unclaimDue`: flips the given executions (a JSON array of ids) that are still running back to
 * suspended, due at `nowMs`, in one statement. Serves: the primary key (`execution_id IN`).
 */
const unclaimDueSql =
  "UPDATE loom_executions SET status = 'suspended', wake_at_ms = @nowMs, " +
  'updated_at_ms = @unclaimedAtMs, claimed_by = NULL ' +
  "WHERE execution_id IN (SELECT value FROM json_each(@ids)) AND status = 'running' " +
  'RETURNING execution_id';

/** What the unclaimDue statement binds. */
export interface UnclaimDueParameters {
  unclaimedAtMs: number;
  nowMs: number;
  /** JSON `[id, …]`. */
  ids: string;
}

/** The unclaimDue statement, prepared once per store. */
export function prepareUnclaimDueStatement(
  db: Database.Database,
): Database.Statement<[UnclaimDueParameters], { execution_id: string }> {
  return db.prepare<[UnclaimDueParameters], { execution_id: string }>(unclaimDueSql);
}
