import { ErrorCode, LoomError } from '../../errors.js';
import { type StoreFailureKind, storeFailure } from '../../internal/store-errors.js';

/** Node socket errors that mean "the server is not reachable", not "the query was wrong". */
const socketCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is going away or cannot take the session: admin/crash shutdown,
 * cannot connect now, too many connections. Class 08 (connection exception) is matched by prefix.
 */
const unavailableStates = new Set(['57P01', '57P02', '57P03', '53300']);

/**
 * `read_only_sql_transaction`: the session is on a server that cannot write, a standby (or an
 * old primary that rejoined at its old address as one). Not a state of the data: the wrong
 * server. Read as a lost connection, so the connection is dropped and the next one looks for
 * the primary (with a host list, Loom finds it; with one host, where it points must move).
 * ADR 0055.
 */
const wrongServerState = '25006';

/** Lock timeouts, serialization failures and deadlocks: retrying later may succeed. */
const busyStates = new Set(['55P03', '40001', '40P01']);

/** `undefined_table` and `invalid_schema_name`: the Loom schema is not there (yet). */
const missingSchemaStates = new Set(['42P01', '3F000']);

/** pg's own messages for a connection that died under it (these errors carry no code). */
const lostConnectionMessage =
  /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|timeout expired|Client was closed/i;

/** pg's messages when `connectionTimeoutMillis` (Loom's `connectTimeoutMs`) ran out. */
const connectTimeoutMessage =
  /timeout exceeded when trying to connect|timeout expired|connection timeout/i;

/**
 * SQLSTATEs of a login the server refused: the role does not exist or may not log in (28000),
 * a wrong password (28P01), no such database (3D000). The server is up but this process cannot
 * use it until someone fixes the configuration: unavailable, not a failure of the call.
 */
const loginRefusedStates = new Set(['28000', '28P01', '3D000']);

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function isConnectionLost(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined && (socketCodes.has(code) || unavailableStates.has(code))) return true;
  if (code === wrongServerState) return true;
  if (code?.startsWith('08')) return true;
  // Node reports a refused connection to a host with several addresses as an AggregateError.
  if (error instanceof AggregateError) return error.errors.some(isConnectionLost);
  return code === undefined && error instanceof Error && lostConnectionMessage.test(error.message);
}

/** True for a standby's answer (25006): the connection is on the wrong server, drop it. */
export function isWrongServer(error: unknown): boolean {
  return codeOf(error) === wrongServerState;
}

/** Maps a `pg` error to the kernel's small set of failure kinds. */
export function classifyPgError(error: unknown): StoreFailureKind {
  const code = codeOf(error);
  if (code === '23505') return 'unique_violation';
  if (code !== undefined && busyStates.has(code)) return 'busy';
  if (isConnectionLost(error)) return 'connection_lost';
  if (code === '53100') return 'full';
  return 'other';
}

/** True when the error says the Loom schema or one of its tables does not exist. */
export function isMissingSchemaError(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && missingSchemaStates.has(code);
}

/** `SCHEMA_NOT_MIGRATED` for a schema that is absent or older than this code. */
export function schemaNotMigrated(
  schema: string,
  found: number | null,
  latest: number,
  cause?: unknown,
): LoomError {
  const what = found === null ? 'has no Loom tables' : `is at schema version ${found}`;
  return new LoomError(
    ErrorCode.SCHEMA_NOT_MIGRATED,
    `Postgres schema "${schema}" ${what} but this Loom needs version ${latest}: run migrate() ` +
      `(or PostgresEventStore#migrate()) with a writable connection first`,
    { schema, expected: latest, actual: found },
    cause,
  );
}

/** `SCHEMA_TOO_NEW` for a schema written by a newer Loom. */
export function schemaTooNew(schema: string, found: number, latest: number): LoomError {
  return new LoomError(
    ErrorCode.SCHEMA_TOO_NEW,
    `Postgres schema "${schema}" is at schema version ${found} but this Loom knows only up to ` +
      `${latest}: upgrade @loom/event-runtime, or point this process at another schema`,
    { schema, expected: latest, actual: found },
  );
}

/**
 * Turns any error of a `pg` call into a {@link LoomError}: `STORE_UNAVAILABLE` when the
 * connection is gone, `STORE_BUSY` for lock/serialization conflicts, `SCHEMA_NOT_MIGRATED` when
 * the tables are missing, `INVALID_ENVELOPE` for text Postgres cannot store (NUL), and
 * `STORE_FAILURE` (with `cause`) for everything else. A `LoomError` passes through unchanged.
 */
export function toLoomError(
  error: unknown,
  context: { schema: string; operation: string; latestVersion: number },
): LoomError {
  if (error instanceof LoomError) return error;
  const { schema, operation } = context;
  if (isMissingSchemaError(error)) {
    return schemaNotMigrated(schema, null, context.latestVersion, error);
  }
  const code = codeOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  if (code !== undefined && loginRefusedStates.has(code)) {
    const what =
      code === '3D000'
        ? 'fix the database name in the connection string (or PGDATABASE), or create it ' +
          '(CREATE DATABASE …)'
        : 'check the user name in the connection string (or PGUSER) and its password, and that ' +
          'the role exists and may log in (CREATE ROLE … LOGIN)';
    return new LoomError(
      ErrorCode.STORE_UNAVAILABLE,
      `${operation} failed: Postgres refused the login: ${detail} (${code}); ${what}`,
      { schema, operation, code },
      error,
    );
  }
  if (code === '22021') {
    return new LoomError(
      ErrorCode.INVALID_ENVELOPE,
      `${operation} failed: a string contains a character Postgres text cannot store (NUL); ` +
        'remove it from the execution id or event type',
      { schema, operation, code },
      error,
    );
  }
  const kind = classifyPgError(error);
  return storeFailure(
    kind,
    pgFailureMessage(kind, code, detail, operation),
    { schema, operation, code },
    error,
  );
}

/** What to tell the reader for each failure kind (the code comes from the kind: store-kit). */
function pgFailureMessage(
  kind: StoreFailureKind,
  code: string | undefined,
  detail: string,
  operation: string,
): string {
  switch (kind) {
    case 'connection_lost':
      if (code === wrongServerState) {
        return (
          `${operation} failed: the Postgres server is read-only (${detail}; 25006): a standby, ` +
          'or an old primary that came back as one; the connection is dropped and the next one ' +
          'looks for the primary (list every host, or point the address at the new primary)'
        );
      }
      if (code === undefined && connectTimeoutMessage.test(detail)) {
        return (
          `${operation} failed: the Postgres server did not answer within connectTimeoutMs ` +
          `(${detail}); check that the host and port are a PostgreSQL server that is up, or ` +
          'raise connectTimeoutMs'
        );
      }
      return (
        `${operation} failed: the Postgres connection was lost or could not be made (${detail}); ` +
        'check that the server is up and reachable, then retry'
      );
    case 'busy':
      return `${operation} failed: Postgres reported a lock or serialization conflict (${detail}); retry`;
    default:
      return `${operation} failed in Postgres (${code ?? 'no SQLSTATE'}): ${detail}`;
  }
}
