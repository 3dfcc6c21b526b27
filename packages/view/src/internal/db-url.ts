import { LoomError, ViewErrorCode } from '../errors.js';

/** Where a view or operator connects, parsed from `sqlite:<path>` or `postgres://…`. */
export type DbTarget =
  | { kind: 'sqlite'; path: string }
  | {
      kind: 'postgres';
      connectionString: string;
      schema: string | undefined;
      /** `?notifications=poll`: no LISTEN/NOTIFY, wake-ups by polling (ADR 0057). */
      notifications?: 'listen' | 'poll' | undefined;
      /** `?pollIntervalMs=<n>`: the poll mode's interval (the store checks its range). */
      pollIntervalMs?: number | undefined;
    };

const schemaParam = 'schema';
const notificationsParam = 'notifications';
const pollIntervalParam = 'pollIntervalMs';

/** Takes Loom's own parameters out of a PostgreSQL URL's query (the driver would refuse them). */
function loomParams(
  db: string,
  params: URLSearchParams,
): Omit<Extract<DbTarget, { kind: 'postgres' }>, 'kind' | 'connectionString'> {
  const schema = params.get(schemaParam) ?? undefined;
  const notifications = params.get(notificationsParam) ?? undefined;
  const interval = params.get(pollIntervalParam) ?? undefined;
  for (const name of [schemaParam, notificationsParam, pollIntervalParam]) params.delete(name);
  if (notifications !== undefined && notifications !== 'listen' && notifications !== 'poll') {
    throw new LoomError(
      ViewErrorCode.INVALID_DB_URL,
      `'${db}': ${notificationsParam} must be listen or poll, got '${notifications}'`,
      { db },
    );
  }
  if (interval !== undefined && !/^\d+$/.test(interval)) {
    throw new LoomError(
      ViewErrorCode.INVALID_DB_URL,
      `'${db}': ${pollIntervalParam} must be a whole number of milliseconds, got '${interval}'`,
      { db },
    );
  }
  return {
    schema,
    notifications,
    pollIntervalMs: interval === undefined ? undefined : Number(interval),
  };
}

/**
 * Parses a database URL. `sqlite:<path>` (also `sqlite://<path>`), or `postgres://…` /
 * `postgresql://…` with an optional `?schema=<name>` (default: the store's, `loom`) and
 * `notifications=poll` / `pollIntervalMs=<n>` (no LISTEN/NOTIFY, ADR 0057); a host list
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
      const loom = loomParams(db, params);
      const rest = params.toString();
      return {
        kind: 'postgres',
        connectionString: rest === '' ? base : `${base}?${rest}`,
        ...loom,
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
    const loom = loomParams(db, url.searchParams);
    return { kind: 'postgres', connectionString: url.toString(), ...loom };
  }
  throw new LoomError(
    ViewErrorCode.INVALID_DB_URL,
    `'${db}' is neither sqlite:<path> nor postgres://…: use --db sqlite:./loom.db or --db postgres://user@host/db`,
    { db },
  );
}
