// A runs search checked and turned into SQL over the execution index (ADR 0027's amendment: the
// view's read-only SQL over the kernel's tables). The page is a keyset read: `(sort column,
// execution_id)` compared with the cursor's row, ordered by both, LIMIT n + 1 (the extra row says
// whether there is a page beyond), served by the indexes of the kernel's migration 9 (SQLite) /
// 10 (Postgres); a waiting filter by the status index on SQLite and the partial index of migration
// 15 on Postgres (ADR 0062). The counts are one GROUP BY over the same filters.
import {
  type DetailedExecutionStatus,
  type ExecutionSummary,
  type WaitKind,
  waitKindBits,
  waitKindsOf,
} from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';
import {
  type RunOrder,
  type RunSearch,
  type RunSort,
  type RunWaiting,
  runSearchLimitDefault,
  runSearchLimitMax,
  runSearchTextMax,
  runWaitings,
} from '../run-search.js';
import { runStatuses } from '../run-statuses.js';

/** The index columns a runs page reads (the log gives the rest). */
export type IndexRowLite = Omit<ExecutionSummary, 'lastEventAt' | 'nextSequence'>;

/** Where a page starts: the row a cursor names, and which way from it. */
export interface Keyset {
  value: number;
  id: string;
  /** `after`: the rows after it in the page's order; `before`: the rows before it. */
  direction: 'after' | 'before';
}

/** A checked search. */
export interface RunQuery {
  idPrefix: string | undefined;
  flow: string | undefined;
  version: string | undefined;
  status: DetailedExecutionStatus | undefined;
  waiting: RunWaiting | undefined;
  updatedFromMs: number | undefined;
  updatedBeforeMs: number | undefined;
  sort: RunSort;
  order: RunOrder;
  limit: number;
  keyset: Keyset | undefined;
}

const settledWays = new Set(['completed', 'failed', 'cancelled', 'continued']);
/** The greatest code point: `prefix + top` sorts after every id that starts with `prefix`. */
const top = String.fromCodePoint(0x10ffff);

function invalid(path: string, message: string): LoomError {
  return new LoomError(ViewErrorCode.INVALID_ARGUMENT, message, { path });
}

function textOf(search: RunSearch, key: 'idPrefix' | 'flow' | 'version'): string | undefined {
  const value = search[key];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > runSearchTextMax) {
    throw invalid(key, `${key} must be a string of at most ${runSearchTextMax} characters`);
  }
  return value;
}

function instantOf(
  search: RunSearch,
  key: 'updatedFromMs' | 'updatedBeforeMs',
): number | undefined {
  const value = search[key];
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw invalid(key, `${key} must be an instant in epoch ms (an integer from 0), got ${value}`);
  }
  return value;
}

/** A cursor: the sort and order it belongs to, the row's sort value and id, base64url JSON. */
export function encodeCursor(sort: RunSort, order: RunOrder, value: number, id: string): string {
  return Buffer.from(JSON.stringify([sort, order, value, id])).toString('base64url');
}

function decodeCursor(
  path: 'after' | 'before',
  cursor: string,
  sort: RunSort,
  order: RunOrder,
): Keyset {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    typeof parsed[2] !== 'number' ||
    typeof parsed[3] !== 'string'
  ) {
    throw invalid(path, `${path} is not a cursor of this runs page: pass a page's cursor as it is`);
  }
  if (parsed[0] !== sort || parsed[1] !== order) {
    throw invalid(
      path,
      `${path} is a cursor of a page sorted by ${parsed[0]} ${parsed[1]}, not ${sort} ${order}: start again from the first page`,
    );
  }
  return { value: parsed[2], id: parsed[3], direction: path };
}

/** Checks a search: `INVALID_ARGUMENT` naming the parameter (`path`) on anything malformed. */
export function runQueryOf(search: RunSearch): RunQuery {
  const limit = search.limit ?? runSearchLimitDefault;
  if (!Number.isInteger(limit) || limit < 1 || limit > runSearchLimitMax) {
    throw invalid('limit', `limit must be an integer from 1 to ${runSearchLimitMax}, got ${limit}`);
  }
  if (search.status !== undefined && !runStatuses.includes(search.status)) {
    throw invalid(
      'status',
      `status must be one of ${runStatuses.join(', ')}, got '${search.status}'`,
    );
  }
  if (search.waiting !== undefined && !runWaitings.includes(search.waiting)) {
    throw invalid(
      'waiting',
      `waiting must be one of ${runWaitings.join(', ')}, got '${search.waiting}'`,
    );
  }
  const sort = search.sort ?? 'updated';
  if (sort !== 'updated' && sort !== 'created') {
    throw invalid('sort', `sort must be updated or created, got '${sort}'`);
  }
  const order = search.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') {
    throw invalid('order', `order must be asc or desc, got '${order}'`);
  }
  if (search.after !== undefined && search.before !== undefined) {
    throw invalid('before', 'give after (the next page) or before (the previous one), not both');
  }
  const updatedFromMs = instantOf(search, 'updatedFromMs');
  const updatedBeforeMs = instantOf(search, 'updatedBeforeMs');
  if (
    updatedFromMs !== undefined &&
    updatedBeforeMs !== undefined &&
    updatedBeforeMs <= updatedFromMs
  ) {
    throw invalid('updatedBeforeMs', 'updatedBeforeMs must come after updatedFromMs');
  }
  const keyset =
    search.after !== undefined
      ? decodeCursor('after', search.after, sort, order)
      : search.before !== undefined
        ? decodeCursor('before', search.before, sort, order)
        : undefined;
  return {
    idPrefix: textOf(search, 'idPrefix'),
    flow: textOf(search, 'flow'),
    version: textOf(search, 'version'),
    status: search.status,
    waiting: search.waiting,
    updatedFromMs,
    updatedBeforeMs,
    sort,
    order,
    limit,
    keyset,
  };
}

/** A statement's text and parameters. */
export interface SqlText {
  text: string;
  values: unknown[];
}

/** The SQL dialect: SQLite (`?`, table `loom_executions`) or Postgres (`$n::type`, a schema). */
export interface Dialect {
  table: string;
  placeholder(index: number, type: 'text' | 'bigint'): string;
  /** `column` starts with a text parameter; `param()` adds it (once per use: `?` is positional). */
  startsWith(column: string, param: () => string): string;
}

export const sqliteDialect: Dialect = {
  table: 'loom_executions',
  placeholder: () => '?',
  startsWith: (column, param) => `substr(${column}, 1, length(${param()})) = ${param()}`,
};

export function postgresDialect(quotedSchema: string): Dialect {
  return {
    table: `${quotedSchema}.executions`,
    placeholder: (index, type) => `$${index}::${type}`,
    startsWith: (column, param) => `starts_with(${column}, ${param()})`,
  };
}

const indexColumns =
  'x.execution_id, x.status, x.settled_as, x.flow, x.version, x.started_by, x.wake_at_ms, ' +
  'x.waiting_for, x.created_at_ms, x.updated_at_ms';

/** The bits `input` stands for: any wait a timer alone does not end. */
const inputBits =
  waitKindBits.signal | waitKindBits.approval | waitKindBits.question | waitKindBits.child;

/**
 * The SQL test of a waiting filter (ADR 0062): a bit of `waiting_for` (constants, not parameters,
 * so Postgres matches its partial index `WHERE status = 'suspended'` and tests the bit in it).
 * A row whose writer said nothing (NULL) falls back to its wake time: `timer` when it has one,
 * `input` when not.
 */
function waitingSql(waiting: RunWaiting): string {
  const suspended = "x.status = 'suspended'";
  if (waiting === 'timer') {
    return `${suspended} AND ((x.waiting_for & ${waitKindBits.timer}) <> 0 OR (x.waiting_for IS NULL AND x.wake_at_ms IS NOT NULL))`;
  }
  if (waiting === 'input') {
    return `${suspended} AND ((x.waiting_for & ${inputBits}) <> 0 OR (x.waiting_for IS NULL AND x.wake_at_ms IS NULL))`;
  }
  return `${suspended} AND (x.waiting_for & ${waitKindBits[waiting]}) <> 0`;
}

/** Whether an index row passes a waiting filter: {@link waitingSql} in code. */
function waitingMatches(waiting: RunWaiting, row: IndexRowLite): boolean {
  if (row.status !== 'suspended') return false;
  const kinds: readonly WaitKind[] | undefined = row.waitingFor;
  if (kinds === undefined) {
    if (waiting === 'timer') return row.wakeAtMs !== null;
    return waiting === 'input' && row.wakeAtMs === null;
  }
  if (waiting === 'input') return kinds.some((kind) => kind !== 'timer');
  return kinds.includes(waiting);
}

/** The filters of a query (its cursor and, for counts, its status aside) as SQL conditions. */
function conditionsOf(
  query: RunQuery,
  dialect: Dialect,
  withStatus: boolean,
): {
  conditions: string[];
  values: unknown[];
  add: (value: unknown, type: 'text' | 'bigint') => string;
} {
  const conditions: string[] = [];
  const values: unknown[] = [];
  const add = (value: unknown, type: 'text' | 'bigint') => {
    values.push(value);
    return dialect.placeholder(values.length, type);
  };
  if (query.idPrefix !== undefined) {
    // The range lets the primary key seek; the prefix test is exact whatever the collation.
    conditions.push(`x.execution_id >= ${add(query.idPrefix, 'text')}`);
    conditions.push(`x.execution_id < ${add(query.idPrefix + top, 'text')}`);
    conditions.push(dialect.startsWith('x.execution_id', () => add(query.idPrefix, 'text')));
  }
  if (withStatus && query.status !== undefined) {
    const column = settledWays.has(query.status) ? 'settled_as' : 'status';
    conditions.push(`x.${column} = ${add(query.status, 'text')}`);
  }
  if (query.waiting !== undefined) conditions.push(waitingSql(query.waiting));
  if (query.flow !== undefined) conditions.push(`x.flow = ${add(query.flow, 'text')}`);
  if (query.version !== undefined) conditions.push(`x.version = ${add(query.version, 'text')}`);
  if (query.updatedFromMs !== undefined) {
    conditions.push(`x.updated_at_ms >= ${add(query.updatedFromMs, 'bigint')}`);
  }
  if (query.updatedBeforeMs !== undefined) {
    conditions.push(`x.updated_at_ms < ${add(query.updatedBeforeMs, 'bigint')}`);
  }
  return { conditions, values, add };
}

/**
 * The page: LIMIT `limit + 1` rows from the cursor, in the order read (for `before`, the reverse
 * of the page's order: the caller turns them round).
 */
export function pageSql(query: RunQuery, dialect: Dialect): SqlText {
  const { conditions, values, add } = conditionsOf(query, dialect, true);
  const column = query.sort === 'updated' ? 'x.updated_at_ms' : 'x.created_at_ms';
  // Read backwards for `before`: the rows just before the cursor come first.
  const ascending = (query.order === 'asc') !== (query.keyset?.direction === 'before');
  if (query.keyset !== undefined) {
    const value = add(query.keyset.value, 'bigint');
    const id = add(query.keyset.id, 'text');
    conditions.push(`(${column}, x.execution_id) ${ascending ? '>' : '<'} (${value}, ${id})`);
  }
  const direction = ascending ? 'ASC' : 'DESC';
  const limit = add(query.limit + 1, 'bigint');
  return {
    text:
      `SELECT ${indexColumns} FROM ${dialect.table} x` +
      (conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`) +
      ` ORDER BY ${column} ${direction}, x.execution_id ${direction} LIMIT ${limit}`,
    values,
  };
}

/** The counts: one row per (status, settled_as) among the runs the filters match. */
export function countsSql(query: RunQuery, dialect: Dialect): SqlText {
  const { conditions, values } = conditionsOf(query, dialect, false);
  return {
    text:
      `SELECT x.status, x.settled_as, count(*) AS n FROM ${dialect.table} x` +
      (conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`) +
      ' GROUP BY x.status, x.settled_as',
    values,
  };
}

/** An index row as either driver returns it (Postgres gives bigints as strings). */
export interface IndexSqlRow {
  execution_id: string;
  status: string;
  settled_as: string | null;
  flow: string | null;
  version: string | null;
  started_by: string | null;
  wake_at_ms: number | string | null;
  waiting_for: number | string | null;
  created_at_ms: number | string;
  updated_at_ms: number | string;
}

export function indexRowOf(row: IndexSqlRow): IndexRowLite {
  return {
    executionId: row.execution_id,
    status: row.status as IndexRowLite['status'],
    settledAs: row.settled_as as IndexRowLite['settledAs'],
    flow: row.flow,
    version: row.version,
    startedBy: row.started_by,
    wakeAtMs: row.wake_at_ms === null ? null : Number(row.wake_at_ms),
    ...(row.status === 'suspended' && row.waiting_for !== null
      ? { waitingFor: waitKindsOf(Number(row.waiting_for)) }
      : {}),
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
  };
}

/** Whether a row passes a query's filters (the memory backend's search; the SQL's twin). */
export function matches(query: RunQuery, row: IndexRowLite, withStatus: boolean): boolean {
  if (query.idPrefix !== undefined && !row.executionId.startsWith(query.idPrefix)) return false;
  if (withStatus && query.status !== undefined) {
    const status = settledWays.has(query.status) ? row.settledAs : row.status;
    if (status !== query.status) return false;
  }
  if (query.waiting !== undefined && !waitingMatches(query.waiting, row)) return false;
  if (query.flow !== undefined && row.flow !== query.flow) return false;
  if (query.version !== undefined && row.version !== query.version) return false;
  if (query.updatedFromMs !== undefined && row.updatedAtMs < query.updatedFromMs) return false;
  if (query.updatedBeforeMs !== undefined && row.updatedAtMs >= query.updatedBeforeMs) return false;
  return true;
}

/** A row's sort value under a query. */
export function sortValueOf(query: RunQuery, row: IndexRowLite): number {
  return query.sort === 'updated' ? row.updatedAtMs : row.createdAtMs;
}
