import pg, { type Pool } from 'pg';
import { ErrorCode, LoomError } from '../../errors.js';
import { readCommittedStartupOption } from './read-committed.js';

/** How a caller points Loom at Postgres: a connection string, or a pool it owns. */
export interface PgConnectionOptions {
  /**
   * `postgres://user@host:port/database` (or `postgresql://`, or `socket:/dir?db=…`); without it
   * (and without `pool`) pg's `PG*` environment variables apply. Checked up front: anything else
   * is `INVALID_ARGUMENT`.
   */
  connectionString?: string;
  /** A pool the caller created and will end; Loom never ends it. */
  pool?: Pool;
  /**
   * How long making a connection may take, from the TCP connect to the server being ready for
   * queries (login included), before the call fails with `STORE_UNAVAILABLE`. Only for a pool
   * Loom creates (set `connectionTimeoutMillis` on your own pool). Default
   * {@link connectTimeoutMsDefault}.
   */
  connectTimeoutMs?: number;
}

/**
 * Default {@link PgConnectionOptions.connectTimeoutMs}: long enough for a cross-region TLS login,
 * short enough that a server that accepts and never answers (a stuck proxy, a half-open port)
 * is reported instead of waited on forever (pg's own default).
 */
export const connectTimeoutMsDefault = 10_000;

/** The pool to use and whether Loom created it (and so must end it). */
export interface ResolvedPool {
  pool: Pool;
  owned: boolean;
}

/**
 * Picks the caller's pool or creates one. Throws `INVALID_ARGUMENT` when given both, for a
 * `connectTimeoutMs` that is not a positive integer (or comes with a pool), and for a connection
 * string that is not a PostgreSQL URL.
 */
export function resolvePool(options: PgConnectionOptions): ResolvedPool {
  if (options.pool !== undefined) {
    if (options.connectionString !== undefined) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        'pass either connectionString or pool, not both: a pool already knows where it connects',
        { path: 'connectionString' },
      );
    }
    if (options.connectTimeoutMs !== undefined) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        'connectTimeoutMs applies to a pool Loom creates: set connectionTimeoutMillis on your pool',
        { path: 'connectTimeoutMs' },
      );
    }
    return { pool: options.pool, owned: false };
  }
  const connectTimeoutMs = options.connectTimeoutMs ?? connectTimeoutMsDefault;
  if (!Number.isSafeInteger(connectTimeoutMs) || connectTimeoutMs < 1) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `connectTimeoutMs must be a positive integer of milliseconds, got ${String(connectTimeoutMs)}`,
      { path: 'connectTimeoutMs', actual: String(connectTimeoutMs) },
    );
  }
  const pool = new pg.Pool({
    ...(options.connectionString === undefined
      ? {}
      : { connectionString: checkConnectionString(options.connectionString) }),
    connectionTimeoutMillis: connectTimeoutMs,
    options: readCommittedStartupOption,
  });
  // An idle client whose server went away emits 'error' on the pool; unhandled, that would kill
  // the process. The next query on the pool fails and is mapped to STORE_UNAVAILABLE instead.
  pool.on('error', () => {});
  return { pool, owned: true };
}

const schemes = new Set(['postgres:', 'postgresql:', 'socket:']);

/**
 * Refuses what pg would misread: pg parses any URL-ish string and connects anyway, so
 * `http://…` or `host:5432/db` ends in a baffling server message ("no PostgreSQL user name
 * specified in startup packet"). The string is never echoed (it may carry a password).
 */
function checkConnectionString(connectionString: string): string {
  const refuse = (problem: string) =>
    new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `connectionString ${problem}: pass postgres://user[:password]@host[:port]/database`,
      { path: 'connectionString' },
    );
  if (typeof connectionString !== 'string' || connectionString.trim() === '') {
    throw refuse('is empty');
  }
  const scheme = /^([a-z][a-z0-9+.-]*:)/i.exec(connectionString)?.[1]?.toLowerCase();
  if (scheme === undefined || !connectionString.includes('//')) {
    if (scheme === 'socket:') return connectionString;
    throw refuse('does not start with postgres://');
  }
  if (!schemes.has(scheme)) throw refuse(`has the scheme "${scheme}", not postgres:`);
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    throw refuse('is not a valid URL (a reserved character in the password must be %-encoded)');
  }
  if (scheme !== 'socket:' && url.hostname === '' && !url.searchParams.has('host')) {
    throw refuse('names no host');
  }
  return connectionString;
}
