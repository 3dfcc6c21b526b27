import { LoomError, SchedulerErrorCode } from '../errors.js';
import { SchedulerLimits } from '../limits.js';
import type { Priority } from '../priority.js';

/** Rank of each priority in the fair queue; 0 is served first. */
export const priorityRank = { high: 0, normal: 1, low: 2 } as const;
export const normalRank = priorityRank.normal;
/** The key of tasks scheduled without one: they share one line of the round-robin. */
export const defaultKey = '';

/** Options of `schedule`, read once and checked. */
export interface ReadScheduleOptions {
  readonly priority: Priority;
  readonly rank: number;
  readonly key: string;
  readonly signal: AbortSignal | undefined;
}

/** A short description of a bad value for `fields.actual` and messages (never the value itself). */
export function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `string ${JSON.stringify(value.slice(0, 40))}`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

export function invalidArgument(
  argument: string,
  expected: string,
  actual: unknown,
  advice: string,
): LoomError {
  const got = describe(actual);
  return new LoomError(
    SchedulerErrorCode.INVALID_ARGUMENT,
    `${argument} must be ${expected}, got ${got}: ${advice}`,
    { argument, expected, actual: got },
  );
}

export function invalidTask(task: unknown): LoomError {
  return invalidArgument(
    'task',
    'a function (signal) => Promise',
    task,
    'pass the work as a function, not its promise (schedule(() => work()), not schedule(work()))',
  );
}

/** A safe integer ≥ `min` (rejects NaN, ±Infinity, fractions and non-numbers). */
export function isWholeNumber(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

export function isAbortSignal(value: unknown): value is AbortSignal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AbortSignal).aborted === 'boolean' &&
    typeof (value as AbortSignal).addEventListener === 'function'
  );
}

/** Checks `schedule`'s options; returns the error instead of throwing, for a rejected promise. */
export function readScheduleOptions(options: unknown): ReadScheduleOptions | LoomError {
  if (typeof options !== 'object' || options === null) {
    return invalidArgument('options', 'an object', options, 'pass { priority, key, signal }');
  }
  const { priority, key, signal } = options as Record<string, unknown>;
  let rank: number = normalRank;
  if (priority !== undefined) {
    if (priority !== 'high' && priority !== 'normal' && priority !== 'low') {
      return invalidArgument(
        'priority',
        "'high', 'normal' or 'low'",
        priority,
        'use one of the three priorities',
      );
    }
    rank = priorityRank[priority];
  }
  if (key !== undefined) {
    if (typeof key !== 'string') {
      return invalidArgument('key', 'a string', key, 'use a tenant, execution or agent id');
    }
    if (key.length > SchedulerLimits.keyLengthMax) {
      return new LoomError(
        SchedulerErrorCode.INVALID_ARGUMENT,
        `key is ${key.length} characters, more than keyLengthMax (${SchedulerLimits.keyLengthMax}): use an id, not a description`,
        {
          argument: 'key',
          limit: 'keyLengthMax',
          expected: SchedulerLimits.keyLengthMax,
          actual: key.length,
        },
      );
    }
  }
  if (signal !== undefined && !isAbortSignal(signal)) {
    return invalidArgument('signal', 'an AbortSignal', signal, 'pass controller.signal');
  }
  return { priority: priority ?? 'normal', rank, key: key ?? defaultKey, signal };
}

/** A task dropped before it started because its signal aborted. */
export function scheduleAborted(signal: AbortSignal, fields: Record<string, unknown>): LoomError {
  return new LoomError(
    SchedulerErrorCode.SCHEDULE_ABORTED,
    'the task was aborted before it started, so it never ran: its signal aborted (see cause)',
    fields,
    signal.reason,
  );
}
