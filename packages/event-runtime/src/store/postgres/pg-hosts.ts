import { ErrorCode, LoomError } from '../../errors.js';

/** One server of a host list: where a connection goes. */
export interface PgHost {
  readonly host: string;
  readonly port: number;
}

/** A connection string split into its host list and a one-host form pg can parse. */
export interface HostList {
  /** The servers, in the order given. */
  readonly hosts: readonly PgHost[];
  /**
   * The connection string with only the first host and no `target_session_attrs` (pg reads
   * the user, password, database and options from it; each connection is aimed at its host).
   * Undefined when there was no connection string (the `hosts` option alone).
   */
  readonly connectionString: string | undefined;
}

/** Hosts in one list, most (a manager's formation rarely passes three). */
export const hostsMax = 16;

const defaultPort = 5432;

/** The `target_session_attrs` values that ask for a server Loom can write to. */
const readWriteAttrs = new Set(['read-write', 'primary']);

function refuse(problem: string, path: string): LoomError {
  return new LoomError(
    ErrorCode.INVALID_ARGUMENT,
    `${path} ${problem}: pass postgres://user@host1:port1,host2:port2/database` +
      '?target_session_attrs=read-write (or hosts: ["host1:port1", "host2:port2"])',
    { path },
  );
}

/** Parses `host`, `host:port` or `[v6]:port`; throws `INVALID_ARGUMENT` naming the entry's index. */
function parseHost(entry: string, index: number, path: string): PgHost {
  const text = entry.trim();
  const match = /^(?:\[([^\]]+)\]|([^:[\]\s/@]+))(?::(\d+))?$/.exec(text);
  if (text === '' || match === null) {
    throw refuse(
      `has ${text === '' ? 'an empty host' : 'a host that is not host[:port]'} at index ${index}`,
      path,
    );
  }
  const host = match[1] ?? match[2] ?? '';
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (!Number.isSafeInteger(port) || port < 1 || port > 65_535) {
    throw refuse(`has port ${match[3]} at index ${index}, not 1..65535`, path);
  }
  return { host, port };
}

function checkCount(hosts: readonly PgHost[], path: string): void {
  if (hosts.length > hostsMax) {
    throw refuse(`lists ${hosts.length} hosts, more than ${hostsMax}`, path);
  }
  const seen = new Set<string>();
  for (const [index, { host, port }] of hosts.entries()) {
    const key = `${host}:${port}`;
    if (seen.has(key)) throw refuse(`lists ${key} twice (again at index ${index})`, path);
    seen.add(key);
  }
}

/** Writes a host for a URL or a message (`[::1]:5432`, `db1:5432`). */
export function hostLabel({ host, port }: PgHost): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Splits a multi-host URL (`postgres://u@h1:p1,h2:p2/db?target_session_attrs=read-write`, the
 * form libpq and failover managers such as pg_auto_failover print) into its hosts. Returns
 * undefined for a one-host URL without `target_session_attrs` (pg connects it as it is).
 * `target_session_attrs` may be `read-write` or `primary` (both mean "the primary"; a host list
 * without it means the same), anything else is `INVALID_ARGUMENT`: Loom writes.
 */
export function splitHostList(connectionString: string): HostList | undefined {
  const path = 'connectionString';
  const start = connectionString.indexOf('//');
  if (start < 0) return undefined;
  const afterSlashes = start + 2;
  const tail = connectionString.slice(afterSlashes);
  const authorityEnd = tail.search(/[/?#]/);
  const authority = authorityEnd < 0 ? tail : tail.slice(0, authorityEnd);
  const rest = authorityEnd < 0 ? '' : tail.slice(authorityEnd);
  const at = authority.lastIndexOf('@');
  const userInfo = at < 0 ? '' : authority.slice(0, at + 1);
  const hostPart = authority.slice(at + 1);
  const query = /\?([^#]*)/.exec(rest)?.[1];
  const params = new URLSearchParams(query ?? '');
  const attrs = params.get('target_session_attrs');
  if (!hostPart.includes(',') && attrs === null) return undefined;
  if (attrs !== null && !readWriteAttrs.has(attrs)) {
    throw refuse(
      `asks for target_session_attrs=${attrs}, but Loom writes: use read-write (or primary)`,
      path,
    );
  }
  const hosts = hostPart.split(',').map((entry, index) => parseHost(entry, index, path));
  checkCount(hosts, path);
  params.delete('target_session_attrs');
  const first = hosts[0] as PgHost;
  const search = params.toString();
  const pathPart = rest.replace(/[?#].*$/, '');
  return {
    hosts,
    connectionString:
      `${connectionString.slice(0, afterSlashes)}${userInfo}${hostLabel(first)}${pathPart}` +
      (search === '' ? '' : `?${search}`),
  };
}

/** Checks the `hosts` option: 1 to {@link hostsMax} `host[:port]` strings, no duplicates. */
export function parseHostsOption(hosts: readonly string[]): PgHost[] {
  if (!Array.isArray(hosts) || hosts.length === 0) {
    throw refuse('is empty or not an array of "host:port" strings', 'hosts');
  }
  const parsed = hosts.map((entry, index) => {
    if (typeof entry !== 'string') throw refuse(`has a non-string at index ${index}`, 'hosts');
    return parseHost(entry, index, 'hosts');
  });
  checkCount(parsed, 'hosts');
  return parsed;
}
