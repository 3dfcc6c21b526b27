/**
 * The SQL of the SQLite snapshot store, one statement per constant (prepared once per store in
 * sqlite-snapshot-store.ts).
 */

/**
 * Insert, or overwrite only with a strictly newer sequence: the comparison happens inside the one
 * statement, under SQLite's write lock, so racing savers cannot move the snapshot backwards.
 */
export const saveSql = `
  INSERT INTO loom_snapshots (execution_id, sequence, state, at)
  VALUES (@executionId, @sequence, @stateText, @at)
  ON CONFLICT (execution_id) DO UPDATE
    SET sequence = excluded.sequence, state = excluded.state, at = excluded.at
    WHERE excluded.sequence > loom_snapshots.sequence`;

/** The newest snapshot of one execution. Serves: loom_snapshots primary key. */
export const loadSql = 'SELECT sequence, state, at FROM loom_snapshots WHERE execution_id = ?';

/** A snapshot row as better-sqlite3 returns it. */
export interface SnapshotRow {
  sequence: number;
  state: string;
  at: number;
}

/**
 * The newest snapshot of one execution and the events after it (from sequence 0 without one),
 * in one statement: the snapshot row first (kind 's', state in `payload`), then up to `limit`
 * event rows (kind 'e'). Serves: loom_snapshots primary key, loom_events_execution_sequence.
 */
export const loadWithTailSql = `
  WITH s AS (SELECT sequence, state, at FROM loom_snapshots WHERE execution_id = @executionId)
  SELECT 's' AS kind, NULL AS position, @executionId AS execution_id, sequence, NULL AS type,
         state AS payload, at, NULL AS prev_hash, NULL AS hash FROM s
  UNION ALL
  SELECT * FROM (
    SELECT 'e' AS kind, position, execution_id, sequence, type, payload, at, prev_hash, hash
    FROM loom_events
    WHERE execution_id = @executionId
      AND sequence > COALESCE((SELECT sequence FROM s), -1)
    ORDER BY sequence LIMIT @limit)`;

/** A row of {@link loadWithTailSql}. */
export interface SnapshotTailRow {
  kind: 's' | 'e';
  position: number | null;
  execution_id: string;
  sequence: number;
  type: string | null;
  payload: string;
  at: number;
  prev_hash: string | null;
  hash: string | null;
}
