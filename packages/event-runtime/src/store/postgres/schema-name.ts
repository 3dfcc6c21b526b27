import { ErrorCode, LoomError } from '../../errors.js';

/**
 * Lower-case identifiers only, so a name never needs case folding rules to match, and at most 40
 * characters, so `<schema>_<bucket>` channels stay under Postgres' 63-byte identifier limit
 * (statement names put a digest of a long schema in its place: `statementName`).
 */
const schemaNamePattern = /^[a-z_][a-z0-9_]{0,39}$/;

/** Validates a schema name (throws `INVALID_ARGUMENT`) and returns it. */
export function checkSchemaName(schema: unknown): string {
  if (typeof schema !== 'string' || !schemaNamePattern.test(schema)) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `schema must match ${schemaNamePattern} (lower-case letters, digits and _, at most 40 ` +
        `characters), got ${JSON.stringify(schema)}`,
      { path: 'schema' },
    );
  }
  return schema;
}

/** Double-quotes a validated identifier for SQL text. */
export function quoteIdent(name: string): string {
  return `"${name}"`;
}
