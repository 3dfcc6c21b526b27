import type { ClientBase, Pool } from 'pg';
import { isMissingSchemaError } from './pg-errors.js';
import { quoteIdent } from './schema-name.js';

/**
 * The schema's version from `<schema>.loom_schema_version`, or null when the schema or the table
 * does not exist (never migrated). Other errors propagate unmapped.
 */
export async function readSchemaVersion(
  queryable: Pool | ClientBase,
  schema: string,
): Promise<number | null> {
  try {
    const result = await queryable.query<{ version: number }>(
      `SELECT version FROM ${quoteIdent(schema)}.loom_schema_version`,
    );
    return result.rows[0]?.version ?? null;
  } catch (error) {
    if (isMissingSchemaError(error)) return null;
    throw error;
  }
}
