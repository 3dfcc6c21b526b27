import { LoomError, MiddlewareErrorCode } from '../errors.js';

type OptionRecord = Readonly<Record<string, unknown>>;

function invalid(where: string, option: string, expected: string, actual: unknown): LoomError {
  return new LoomError(
    MiddlewareErrorCode.INVALID_ARGUMENT,
    `${where}: option '${option}' must be ${expected}, got ${describe(actual)}`,
    { option, expected, actual },
  );
}

function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return String(value);
  }
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (value === null) return 'null';
  return typeof value;
}

/**
 * Checks that `options` is an object whose keys are all `known`, so a misspelt option
 * (`attemptsMax` for `attempts`) fails loudly instead of silently taking a default.
 */
export function checkOptionsObject(
  where: string,
  options: unknown,
  known: readonly string[],
  path = 'options',
): OptionRecord {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalid(where, path, 'an object', options);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      const option = path === 'options' ? key : `${path}.${key}`;
      throw invalid(where, option, `unknown (known: ${known.join(', ')})`, key);
    }
  }
  return options as OptionRecord;
}

/** The range {@link requireNumber} accepts. */
export interface NumberRange {
  min: number;
  max: number;
  /** `min` itself is not allowed (for rates, where 0 would mean "never"). */
  minExclusive?: boolean;
  integer?: boolean;
}

/** A finite number in range; throws `INVALID_ARGUMENT` naming the option. */
export function requireNumber(
  where: string,
  option: string,
  value: unknown,
  range: NumberRange,
): number {
  const low = range.minExclusive === true ? `above ${range.min}` : `from ${range.min}`;
  const expected = `${range.integer === true ? 'an integer' : 'a number'} ${low} to ${range.max}`;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw invalid(where, option, expected, value);
  }
  if (range.integer === true && !Number.isInteger(value)) {
    throw invalid(where, option, expected, value);
  }
  const tooLow = range.minExclusive === true ? value <= range.min : value < range.min;
  if (tooLow || value > range.max) throw invalid(where, option, expected, value);
  return value;
}

/** Like {@link requireNumber}, but `undefined` gives `fallback`. */
export function optionalNumber(
  where: string,
  option: string,
  value: unknown,
  range: NumberRange,
  fallback: number,
): number {
  return value === undefined ? fallback : requireNumber(where, option, value, range);
}

/** A function, or `undefined` when the option is not given. */
export function optionalFunction<F>(where: string, option: string, value: unknown): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw invalid(where, option, 'a function', value);
  return value as F;
}

/** A function; throws `INVALID_ARGUMENT` naming the option otherwise. */
export function requireFunction<F>(where: string, option: string, value: unknown): F {
  if (typeof value !== 'function') throw invalid(where, option, 'a function', value);
  return value as F;
}

/** One of `choices`, or `fallback` when `undefined`. */
export function optionalChoice<C extends string>(
  where: string,
  option: string,
  value: unknown,
  choices: readonly C[],
  fallback: C,
): C {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw invalid(where, option, `one of ${choices.map((c) => `'${c}'`).join(', ')}`, value);
  }
  return value as C;
}

/** An object with a method named `method` (a tracer, a clock); throws `INVALID_ARGUMENT` otherwise. */
export function requireObjectWithMethod<T>(
  where: string,
  option: string,
  value: unknown,
  method: string,
): T {
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as Record<string, unknown>)[method] !== 'function'
  ) {
    throw invalid(where, option, `an object with a ${method}() method`, value);
  }
  return value as T;
}

/** An object with a `now()` method (a `Clock`), or `undefined`. */
export function optionalClock<C>(where: string, value: unknown): C | undefined {
  return value === undefined ? undefined : requireObjectWithMethod<C>(where, 'clock', value, 'now');
}
