/**
 * The SQL of the SQLite lease store, one statement per constant (prepared once per store in
 * sqlite-lease-store.ts).
 */

// Each batch is one statement, so one implicit transaction: the ids travel as one JSON array
// parameter and json_each turns them into rows. A write statement takes SQLite's write lock
// before it reads, so two connections (or processes) serialize on it and cannot both win an id.

/** Grant free, expired (expires_at_ms <= now) or already-owned ids; RETURNING lists the granted. */
export const acquireSql = `
  INSERT INTO loom_leases (execution_id, owner, expires_at_ms)
  SELECT value, @owner, @expiresAtMs FROM json_each(@ids) WHERE true
  ON CONFLICT (execution_id) DO UPDATE
    SET owner = excluded.owner, expires_at_ms = excluded.expires_at_ms
    WHERE loom_leases.expires_at_ms <= @nowMs OR loom_leases.owner = excluded.owner
  RETURNING execution_id`;

/** Extend the owner's leases, expired ones included (untaken, they are still the owner's). */
export const renewSql = `
  UPDATE loom_leases SET expires_at_ms = @expiresAtMs
  WHERE owner = @owner AND execution_id IN (SELECT value FROM json_each(@ids))
  RETURNING execution_id`;

/** Delete the owner's leases among the ids; rows of other owners are never touched. */
export const releaseSql = `
  DELETE FROM loom_leases
  WHERE owner = @owner AND execution_id IN (SELECT value FROM json_each(@ids))`;

/** One execution's lease, if any. Serves: loom_leases primary key. */
export const getSql = 'SELECT owner, expires_at_ms FROM loom_leases WHERE execution_id = ?';
