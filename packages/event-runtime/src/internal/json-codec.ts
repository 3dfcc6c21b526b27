import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';

/**
 * Turns a payload into the exact text the log stores, refusing anything JSON cannot give back.
 * Round-trip rule: what `decodePayload(encodePayload(x))` returns is deep-equal to `x`,
 * including `-0`, unicode and empty containers. Integers beyond 2^53 must be strings (BigInt
 * is refused); doubles round-trip exactly because JSON text keeps their shortest form.
 */
export function encodePayload(
  payload: unknown,
  executionId?: string,
  limit: 'payloadBytesMax' | 'snapshotBytesMax' = 'payloadBytesMax',
): string {
  // The walk's stacks are reused between calls (an encode allocates no Set and no path strings);
  // a getter that encodes while a walk is under way gets stacks of its own.
  const reuse = !walking;
  const walk: Walk = {
    negativeZero: false,
    units: 0,
    unitsMax: 2 * Limits[limit],
    limit,
    executionId,
    ancestors: reuse ? sharedAncestors : [],
    keys: reuse ? sharedKeys : [],
  };
  walking = true;
  try {
    check(payload, 0, walk);
    // JSON.stringify is fast and exact for everything `check` accepts except -0 (it prints 0).
    return walk.negativeZero ? stringifyExact(payload as JsonValue) : JSON.stringify(payload);
  } catch (error) {
    if (error instanceof LoomError) throw error;
    // A getter or a proxy trap threw while the value was read (or gave another value the second
    // time): the caller passed something that is not plain data.
    throw new LoomError(
      ErrorCode.PAYLOAD_NOT_JSON,
      'payload cannot be stored: reading it threw. Pass plain data (no getters or proxies)',
      executionId === undefined ? {} : { executionId },
      error,
    );
  } finally {
    if (reuse) {
      walking = false;
      sharedAncestors.length = 0;
      sharedKeys.length = 0;
    }
  }
}

let walking = false;
const sharedAncestors: object[] = [];
const sharedKeys: Array<string | number> = [];

/**
 * What one walk over a payload carries. `units` is a lower bound of the length of its JSON text
 * (each string's length and its quotes, each key's, one per other value), and that text's
 * UTF-8 form has at least as many bytes as it has UTF-16 units: past `unitsMax` (twice the
 * limit) the payload is far over its limit, refused before `JSON.stringify` builds a text that
 * could exceed what a string can hold (which throws a RangeError) or take a gigabyte of memory.
 * A payload nearer the limit is encoded and its exact size checked by the caller, whose message
 * names the exact size.
 *
 * `ancestors` are the containers from the root down to the value being checked (a cycle is a
 * container that is its own ancestor; a payload is at most `payloadDepthMax` deep, and most are a
 * few levels, where a scan beats a Set), `keys` the keys and indexes leading to it: the path an
 * error names is built from them only when there is an error.
 */
interface Walk {
  negativeZero: boolean;
  units: number;
  readonly unitsMax: number;
  readonly limit: 'payloadBytesMax' | 'snapshotBytesMax';
  readonly executionId: string | undefined;
  readonly ancestors: object[];
  readonly keys: Array<string | number>;
}

/** `$`, then `.key` or `[index]` per level: where the value being checked is. */
function pathOf(walk: Walk): string {
  let path = '$';
  for (const key of walk.keys) path += typeof key === 'number' ? `[${key}]` : `.${key}`;
  return path;
}

function count(walk: Walk, units: number): void {
  walk.units += units;
  if (walk.units <= walk.unitsMax) return;
  const path = pathOf(walk);
  throw new LoomError(
    ErrorCode.LIMIT_EXCEEDED,
    `payload at ${path} makes its JSON at least ${walk.units} bytes, over ${walk.limit} ` +
      `(${Limits[walk.limit]}): move large content to a content store and keep a reference`,
    {
      limit: walk.limit,
      path,
      ...(walk.executionId === undefined ? {} : { executionId: walk.executionId }),
    },
  );
}

/** Parses stored payload text back into a value (`-0` included). */
export function decodePayload(text: string): JsonValue {
  return JSON.parse(text) as JsonValue;
}

const refusedKinds: Partial<Record<string, string>> = {
  undefined: 'undefined',
  bigint: 'a BigInt (store large integers as strings)',
  function: 'a function',
  symbol: 'a symbol',
};

function fail(walk: Walk, what: string): never {
  const path = pathOf(walk);
  const { executionId } = walk;
  throw new LoomError(
    ErrorCode.PAYLOAD_NOT_JSON,
    `payload at ${path} is ${what}, which JSON cannot store and give back: convert it to a ` +
      'string, number, boolean, null, array or plain object first',
    executionId === undefined ? { path } : { path, executionId },
  );
}

function check(value: unknown, depth: number, walk: Walk): void {
  const kind = typeof value;
  if (kind === 'string') {
    count(walk, (value as string).length + 2);
    return;
  }
  if (kind === 'boolean') {
    count(walk, 1);
    return;
  }
  if (kind === 'number') {
    if (!Number.isFinite(value)) fail(walk, String(value));
    if (value === 0 && Object.is(value, -0)) walk.negativeZero = true;
    count(walk, 1);
    return;
  }
  const refused = refusedKinds[kind];
  if (refused !== undefined) fail(walk, refused);
  if (value === null) {
    count(walk, 1);
    return;
  }
  const object = value as object;
  if (depth >= Limits.payloadDepthMax) {
    const path = pathOf(walk);
    const { executionId } = walk;
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `payload at ${path} nests deeper than payloadDepthMax (${Limits.payloadDepthMax})`,
      { limit: 'payloadDepthMax', path, ...(executionId === undefined ? {} : { executionId }) },
    );
  }
  const { ancestors, keys } = walk;
  if (ancestors.includes(object)) fail(walk, 'a reference cycle');
  ancestors.push(object);
  count(walk, 2);
  if (Array.isArray(object)) {
    for (let index = 0; index < object.length; index++) {
      keys.push(index);
      if (!(index in object)) fail(walk, 'a hole in a sparse array');
      check(object[index], depth + 1, walk);
      keys.pop();
    }
  } else {
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      const name = (object as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      fail(walk, `an instance of ${name} (only plain objects round-trip)`);
    }
    if (Object.getOwnPropertySymbols(object).length > 0) fail(walk, 'keyed by a symbol');
    // for-in, not Object.keys: no array per object. Own keys come first and in the order
    // JSON.stringify writes them; an inherited enumerable key (a polluted prototype) is skipped.
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue;
      count(walk, key.length + 3);
      keys.push(key);
      check((object as Record<string, unknown>)[key], depth + 1, walk);
      keys.pop();
    }
  }
  ancestors.pop();
}

function stringifyExact(value: JsonValue): string {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : JSON.stringify(value);
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stringifyExact).join(',')}]`;
  const parts: string[] = [];
  for (const key of Object.keys(value)) {
    parts.push(`${JSON.stringify(key)}:${stringifyExact(value[key] as JsonValue)}`);
  }
  return `{${parts.join(',')}}`;
}
