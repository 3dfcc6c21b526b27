import { LoomError, ViewErrorCode } from '../errors.js';

/** Where a view or operator connects, parsed from `sqlite:<path>` or `postgres://…`. */
export type DbTarget =
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; connectionString: string; schema: string | undefined };

const schemaParam = 'schema';

/**
 * Parses a database URL. `sqlite:<path>` (also `sqlite://<path>`), or `postgres://…` /
 * `postgresql://…` with an optional `?schema=<name>` (default: the store's, `loom`); a host list
 * (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`) goes to the store as it is.
 * Throws `INVALID_DB_URL`.
 */
export function parseDbUrl(db: string | undefined): DbTarget {
  if (db === undefined || db.trim() === '') {
    throw new LoomError(
      ViewErrorCode.INVALID_DB_URL,
      'no database given: pass --db sqlite:<path> or --db postgres://user@host/db (or set LOOM_DB)',
      {},
    );
  }
  if (db.startsWith('sqlite:')) {
    const path = db.slice('sqlite:'.length).replace(/^\/\//, '');
    if (path === '') {
      throw new LoomError(
        ViewErrorCode.INVALID_DB_URL,
        `'${db}' names no file: use sqlite:./loom.db`,
        { db },
      );
    }
    return { kind: 'sqlite', path };
  }
  if (db.startsWith('postgres://') || db.startsWith('postgresql://')) {
    // A host list (postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write) is no
    // WHATWG URL: take the schema out of its query here; the store checks the rest.
    const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(db)?.[1] ?? '';
    if (authority.includes(',')) {
      const [base, query = ''] = db.split('?', 2) as [string, string?];
      const params = new URLSearchParams(query);
      const schema = params.get(schemaParam) ?? undefined;
      params.delete(schemaParam);
      const rest = params.toString();
      return {
        kind: 'postgres',
        connectionString: rest === '' ? base : `${base}?${rest}`,
        schema,
      };
    }
    let url: URL;
    try {
      url = new URL(db);
    } catch (error) {
      throw new LoomError(
        ViewErrorCode.INVALID_DB_URL,
        `'${db}' is not a valid PostgreSQL URL: use postgres://user@host:5432/db?schema=loom`,
        { db },
        error,
      );
    }
    const schema = url.searchParams.get(schemaParam) ?? undefined;
    url.searchParams.delete(schemaParam);
    return { kind: 'postgres', connectionString: url.toString(), schema };
  }
  throw new LoomError(
    ViewErrorCode.INVALID_DB_URL,
    `'${db}' is neither sqlite:<path> nor postgres://…: use --db sqlite:./loom.db or --db postgres://user@host/db`,
    { db },
  );
}
