/**
 * A named prepared statement: pg parses it once per connection and afterwards sends only Bind and
 * Execute. Names carry the schema because a pool may serve stores of several schemas and pg
 * refuses one name with two texts.
 */
export interface PgStatement {
  readonly name: string;
  readonly text: string;
}

/** `loom:<schema>:<what>` (schema names are at most 40 characters, so this fits in 63). */
export function statementName(schema: string, what: string): string {
  return `loom:${schema}:${what}`;
}
