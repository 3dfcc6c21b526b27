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
