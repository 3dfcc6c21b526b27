import { createHash } from 'node:crypto';

/**
 * A named prepared statement: pg parses it once per connection and afterwards sends only Bind and
 * Execute. Names carry the schema because a pool may serve stores of several schemas and pg
 * refuses one name with two texts.
 */
export interface PgStatement {
  readonly name: string;
  readonly text: string;
}

/** Postgres keeps the first 63 bytes of a prepared statement's name (NAMEDATALEN - 1). */
const pgNameBytesMax = 63;

/** Hex digits of a long schema's digest in a statement name: 64 bits, one per schema in practice. */
const schemaDigestChars = 16;

/** The digest standing in for each long schema name seen (one hash per schema, not per call). */
const schemaDigests = new Map<string, string>();

/**
 * `loom:<schema>:<what>`, or `loom:<digest of schema>:<what>` when that would pass Postgres' 63
 * bytes: a schema may be 40 characters and the longest `what` 29, and a longer name is cut short
 * by the server (two names sharing their first 63 bytes would clash) while pg prints a warning on
 * the user's stderr at every parse. Schema names and `what` are ASCII, so characters are bytes.
 */
export function statementName(schema: string, what: string): string {
  const name = `loom:${schema}:${what}`;
  if (name.length <= pgNameBytesMax) return name;
  let digest = schemaDigests.get(schema);
  if (digest === undefined) {
    digest = createHash('sha256').update(schema).digest('hex').slice(0, schemaDigestChars);
    schemaDigests.set(schema, digest);
  }
  return `loom:${digest}:${what}`;
}
