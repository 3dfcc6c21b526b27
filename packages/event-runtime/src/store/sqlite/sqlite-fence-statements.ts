import type Database from 'better-sqlite3';

/** The execution's fence epoch (no row: 0). Serves: loom_fences primary key. */
const fenceCurrentSql = 'SELECT epoch FROM loom_fences WHERE execution_id = ?';

/** Advances the epoch (the first advance makes it 1) and returns it, in one statement. */
const fenceAdvanceSql =
  'INSERT INTO loom_fences (execution_id, epoch) VALUES (?, 1) ' +
  'ON CONFLICT (execution_id) DO UPDATE SET epoch = epoch + 1 RETURNING epoch';

/** The fence statements. */
export interface SqliteFenceStatements {
  fence: Database.Statement<[string], { epoch: number }>;
  advanceFence: Database.Statement<[string], { epoch: number }>;
}

/** The fence statements, prepared once per store. */
export function prepareFenceStatements(db: Database.Database): SqliteFenceStatements {
  return {
    fence: db.prepare<[string], { epoch: number }>(fenceCurrentSql),
    advanceFence: db.prepare<[string], { epoch: number }>(fenceAdvanceSql),
  };
}
