import { type PgStatement, statementName } from './pg-statement.js';

/** The execution's current epoch (no row means 0). */
export function fenceCurrentStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'fence-current'),
    text: `SELECT epoch FROM ${quotedSchema}.fences WHERE execution_id = $1::text`,
  };
}

/** Advances the epoch atomically (0 → 1 on first use) and returns the new one. */
export function fenceAdvanceStatement(quotedSchema: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'fence-advance'),
    text: `INSERT INTO ${quotedSchema}.fences AS f (execution_id, epoch) VALUES ($1::text, 1)
ON CONFLICT (execution_id) DO UPDATE SET epoch = f.epoch + 1
RETURNING epoch`,
  };
}
