// The runs page's query string (`/api/runs`, `/api/counts`, `/api/stream`, and the page's own
// address, so a filtered page can be shared and reloaded) read into a RunSearch. Only the types
// are checked here; the view checks the values (limits, enums, cursors) with the same error.
import type { DetailedExecutionStatus } from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../../errors.js';
import type { RunOrder, RunSearch, RunSort, RunWaiting } from '../../run-search.js';

/** The parameters a runs search takes, as the page writes them in its address. */
export const runSearchParams = [
  'id',
  'flow',
  'version',
  'status',
  'waiting',
  'updatedFrom',
  'updatedBefore',
  'sort',
  'order',
  'limit',
  'after',
  'before',
] as const;

function invalid(path: string, message: string): LoomError {
  return new LoomError(ViewErrorCode.INVALID_ARGUMENT, message, { path });
}

function integer(path: string, value: string): number {
  if (!/^\d{1,16}$/.test(value)) {
    throw invalid(path, `${path} must be an integer (epoch ms for a time), got '${value}'`);
  }
  return Number(value);
}

/**
 * A RunSearch from query parameters; an unknown parameter (a typo would otherwise be ignored and
 * show every run) or a malformed number is `INVALID_ARGUMENT` naming it. `extra` names the other
 * parameters the route takes.
 */
export function runSearchOf(
  query: Record<string, string>,
  extra: readonly string[] = [],
): RunSearch {
  for (const key of Object.keys(query)) {
    if (!(runSearchParams as readonly string[]).includes(key) && !extra.includes(key)) {
      throw invalid(
        key,
        `unknown parameter '${key}': a runs search takes ${[...runSearchParams, ...extra].join(', ')}`,
      );
    }
  }
  const given = (key: string) => {
    const value = query[key];
    return value === undefined || value === '' ? undefined : value;
  };
  const search: RunSearch = {};
  const id = given('id');
  if (id !== undefined) search.idPrefix = id;
  const flow = given('flow');
  if (flow !== undefined) search.flow = flow;
  const version = given('version');
  if (version !== undefined) search.version = version;
  const status = given('status');
  if (status !== undefined) search.status = status as DetailedExecutionStatus;
  const waiting = given('waiting');
  if (waiting !== undefined) search.waiting = waiting as RunWaiting;
  const from = given('updatedFrom');
  if (from !== undefined) search.updatedFromMs = integer('updatedFrom', from);
  const before = given('updatedBefore');
  if (before !== undefined) search.updatedBeforeMs = integer('updatedBefore', before);
  const sort = given('sort');
  if (sort !== undefined) search.sort = sort as RunSort;
  const order = given('order');
  if (order !== undefined) search.order = order as RunOrder;
  const limit = given('limit');
  if (limit !== undefined) search.limit = integer('limit', limit);
  const afterCursor = given('after');
  if (afterCursor !== undefined) search.after = afterCursor;
  const beforeCursor = given('before');
  if (beforeCursor !== undefined) search.before = beforeCursor;
  return search;
}
