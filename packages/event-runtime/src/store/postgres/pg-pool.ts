import pg, { type Pool } from 'pg';
import { ErrorCode, LoomError } from '../../errors.js';
import {
  type HostList,
  hostLabel,
  type PgHost,
  parseHostsOption,
  splitHostList,
} from './pg-hosts.js';
import { failoverClientClass, PrimaryFinder } from './primary-finder.js';
import { readCommittedStartupOption } from './read-committed.js';

/** How a caller points Loom at Postgres: a connection string, or a pool it owns. */
export interface PgConnectionOptions {
  /**
   * `postgres://user@host:port/database` (or `postgresql://`, or `socket:/dir?db=…`); without it
   * (and without `pool`) pg's `PG*` environment variables apply. Checked up front: anything else
   * is `INVALID_ARGUMENT`.
   */
  connectionString?: string;
  /**
   * Several servers, `"host:port"` each, of which Loom uses the read-write one (the primary),
   * found on connect and again whenever a connection to it fails (a failover). The same as a
   * multi-host `connectionString` (`postgres://user@h1:5432,h2:5432/db?target_session_attrs=read-write`);
   * give the hosts in one place only. User, password and database come from `connectionString`
   * (without a host) or pg's `PG*` variables. Only for a pool Loom creates. ADR 0055.
   */
  hosts?: readonly string[];
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
  /** Over a host list: what finds the primary (undefined for one host or a caller's pool). */
  finder: PrimaryFinder | undefined;
}

/** The client class `pool` creates connections with (a host list's aims each at the primary). */
export function clientClassOf(pool: Pool): typeof pg.Client {
  return (pool as unknown as { Client?: typeof pg.Client }).Client ?? pg.Client;
}

/**
 * Picks the caller's pool or creates one. Throws `INVALID_ARGUMENT` when given both, for a
 * `connectTimeoutMs` that is not a positive integer (or comes with a pool), and for a connection
 * string that is not a PostgreSQL URL.
 */
export function resolvePool(options: PgConnectionOptions, max?: number): ResolvedPool {
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
    if (options.hosts !== undefined) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        'hosts applies to a pool Loom creates: a pool already knows where it connects',
        { path: 'hosts' },
      );
    }
    return { pool: options.pool, owned: false, finder: undefined };
  }
  const connectTimeoutMs = options.connectTimeoutMs ?? connectTimeoutMsDefault;
  if (!Number.isSafeInteger(connectTimeoutMs) || connectTimeoutMs < 1) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `connectTimeoutMs must be a positive integer of milliseconds, got ${String(connectTimeoutMs)}`,
      { path: 'connectTimeoutMs', actual: String(connectTimeoutMs) },
    );
  }
  const list = hostListOf(options);
  const config: pg.PoolConfig = {
    ...(list === undefined
      ? options.connectionString === undefined
        ? {}
        : { connectionString: options.connectionString }
      : list.connectionString === undefined
        ? { host: list.hosts[0]?.host, port: list.hosts[0]?.port }
        : { connectionString: list.connectionString }),
    connectionTimeoutMillis: connectTimeoutMs,
    options: readCommittedStartupOption,
    ...(max === undefined ? {} : { max }),
  };
  const finder = list === undefined ? undefined : new PrimaryFinder(list.hosts, config);
  const pool = new pg.Pool(
    finder === undefined ? config : { ...config, Client: failoverClientClass(finder) },
  );
  // An idle client whose server went away emits 'error' on the pool; unhandled, that would kill
  // the process. The next query on the pool fails and is mapped to STORE_UNAVAILABLE instead.
  pool.on('error', () => {});
  return { pool, owned: true, finder };
}

/**
 * The host list of the options, if they give several hosts (or ask for the read-write one):
 * from `hosts`, or from a multi-host `connectionString`. `INVALID_ARGUMENT` for hosts given in
 * both places or a bad list.
 */
function hostListOf(options: PgConnectionOptions): HostList | undefined {
  if (options.hosts === undefined) {
    if (options.connectionString === undefined) return undefined;
    return splitHostList(checkConnectionString(options.connectionString));
  }
  const hosts = parseHostsOption(options.hosts);
  const given = options.connectionString;
  if (given === undefined) return { hosts, connectionString: undefined };
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(String(given))?.[1] ?? '';
  if (authority.slice(authority.lastIndexOf('@') + 1) !== '') {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      'give the hosts either in connectionString or in hosts, not both: write the connection ' +
        'string without a host (postgres://user@/database) when you pass hosts',
      { path: 'hosts' },
    );
  }
  const first = hosts[0] as PgHost;
  const oneHost = String(given).replace(/^([a-z]+:\/\/(?:[^/?#]*@)?)/i, `$1${hostLabel(first)}`);
  return { hosts, connectionString: checkConnectionString(oneHost) };
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
  // A host list is checked by splitHostList; its one-host form must still be a URL.
  const oneHost = splitHostList(connectionString)?.connectionString ?? connectionString;
  let url: URL;
  try {
    url = new URL(oneHost);
  } catch {
    throw refuse('is not a valid URL (a reserved character in the password must be %-encoded)');
  }
  if (scheme !== 'socket:' && url.hostname === '' && !url.searchParams.has('host')) {
    throw refuse('names no host');
  }
  return connectionString;
}

/**
 * A `pg` pool connected the way Loom's stores connect: the connection string checked, the
 * connect timeout set, a host list's connections aimed at its read-write primary (found again
 * after a failover), and an `'error'` listener so a dead idle connection never ends the process.
 * For your own queries beside Loom's on the same database (a projection, a report). You end it.
 * Throws `INVALID_ARGUMENT` as `openPostgres` does (`pool` is not accepted here).
 *
 * @example
 * import { createPostgresPool } from '@loom/event-runtime/postgres';
 * const pool = createPostgresPool({
 *   connectionString: 'postgres://app@db1:5432,db2:5432/app?target_session_attrs=read-write',
 *   max: 2,
 * });
 * await pool.end();
 */
export function createPostgresPool(
  options: Omit<PgConnectionOptions, 'pool'> & { max?: number },
): Pool {
  const { max, ...connection } = options;
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 1)) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `max must be a positive integer of connections, got ${String(max)}`,
      { path: 'max', actual: String(max) },
    );
  }
  if ((connection as PgConnectionOptions).pool !== undefined) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      'createPostgresPool creates a pool: pass no pool',
      {
        path: 'pool',
      },
    );
  }
  return resolvePool(connection, max).pool;
}
