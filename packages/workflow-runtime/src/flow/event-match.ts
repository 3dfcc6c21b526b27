import type { JsonValue } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';

/**
 * A filter on events as data (so another process can evaluate it): a dotted path in the event
 * (`data.orderId`, `name`, `id`) → the value it must equal (a string, number, boolean or null).
 * Every pair must hold; `{}` matches every event.
 */
export type EventMatch = Readonly<Record<string, string | number | boolean | null>>;

/** The most pairs a match may have: every delivery evaluates it against every event. */
export const eventMatchPairsMax = 16;

/** The longest path of a match (its characters). */
const eventMatchPathLengthMax = 200;

/** The fields of a published event a match path may start with. */
const eventRoots = new Set(['name', 'id', 'data', 'publishedAtMs']);

const segmentPattern = /^[A-Za-z0-9_$-]+$/;

/** Throws `INVALID_ARGUMENT` unless `path` is a dotted path starting at one of `roots`. */
function checkPath(path: string, roots: ReadonlySet<string>, where: string): string[] {
  const segments = path.split('.');
  if (
    path.length === 0 ||
    path.length > eventMatchPathLengthMax ||
    !segments.every((segment) => segmentPattern.test(segment)) ||
    !roots.has(segments[0] as string)
  ) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${where}: '${path}' is not a path such as 'data.orderId' (dotted names of letters, digits, ` +
        `_ $ -, starting with ${[...roots].join(', ')}; at most ${eventMatchPathLengthMax} characters)`,
      { path: where, actual: path },
    );
  }
  return segments;
}

function checkPairs(match: unknown, where: string): Array<[string, unknown]> {
  if (typeof match !== 'object' || match === null || Array.isArray(match)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${where} must be an object of event path → value, such as { 'data.orderId': 'o-7' }`,
      {
        path: where,
        actual: Array.isArray(match) ? 'array' : match === null ? null : typeof match,
      },
    );
  }
  const pairs = Object.entries(match);
  if (pairs.length > eventMatchPairsMax) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${where} has ${pairs.length} pairs, more than the ${eventMatchPairsMax} allowed`,
      { path: where, actual: pairs.length },
    );
  }
  return pairs;
}

/**
 * Checks the `match` of `ctx.waitForEvent`: paths into the event, primitive values. Throws
 * `INVALID_ARGUMENT` naming the bad pair.
 */
export function checkEventMatch(match: unknown, where: string): EventMatch {
  for (const [path, value] of checkPairs(match, where)) {
    checkPath(path, eventRoots, where);
    const kind = value === null ? 'null' : typeof value;
    if (
      !(kind === 'string' || kind === 'boolean' || kind === 'null' || kind === 'number') ||
      (kind === 'number' && !Number.isFinite(value))
    ) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `${where}: the value of '${path}' must be a string, a finite number, a boolean or null, got ${kind}`,
        { path: where, actual: kind },
      );
    }
  }
  return match as EventMatch;
}

/**
 * Checks a `cancelOn` entry's `match`: paths into the event, each value a path into the input
 * written `input` or `input.<path>`. Throws `INVALID_ARGUMENT` naming the bad pair.
 */
export function checkCancelMatch(match: unknown, where: string): void {
  for (const [path, value] of checkPairs(match, where)) {
    checkPath(path, eventRoots, where);
    if (typeof value !== 'string') {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `${where}: the value of '${path}' must name a field of the run's input, such as 'input.orderId', got ${typeof value}`,
        { path: where, actual: typeof value },
      );
    }
    checkPath(value, new Set(['input']), where);
  }
}

/** The value at a dotted path of `value` (undefined where it runs out). */
function at(value: unknown, segments: readonly string[]): unknown {
  let current = value;
  for (const segment of segments) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/** True when every pair of `match` holds on `event` (a path that is absent never matches). */
export function eventMatches(event: object, match: EventMatch): boolean {
  for (const [path, value] of Object.entries(match)) {
    if (at(event, path.split('.')) !== value) return false;
  }
  return true;
}

/**
 * A `cancelOn` match made concrete for one run: each `input.<path>` replaced by the input's value
 * there. A path the input lacks, or whose value is not a primitive, never matches (undefined).
 */
export function cancelMatchFor(
  match: Readonly<Record<string, string>> | undefined,
  input: unknown,
): EventMatch | undefined {
  const concrete: Record<string, string | number | boolean | null> = {};
  for (const [path, inputPath] of Object.entries(match ?? {})) {
    const value = at({ input }, inputPath.split('.')) as JsonValue | undefined;
    if (value === undefined || (typeof value === 'object' && value !== null)) return undefined;
    concrete[path] = value;
  }
  return concrete;
}
