import { LoomError, WorkflowErrorCode } from '../errors.js';

const unitMs: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** A duration: milliseconds, or text like `'90s'`, `'15m'`, `'1h30m'`, `'3d'`, `'2w'`. */
export type Duration = number | string;

/** Longest duration accepted (100 years): anything longer is a unit mistake. */
export const durationMaxMs = 100 * 365 * unitMs.d!;

/**
 * Milliseconds of a duration. Throws `INVALID_ARGUMENT` naming the text for anything else
 * (negative, fractional ms, unknown unit, empty, over 100 years).
 */
export function parseDuration(duration: Duration, what = 'duration'): number {
  let ms: number;
  if (typeof duration === 'number') {
    ms = duration;
  } else if (typeof duration === 'string' && /^(\d+(ms|s|m|h|d|w))+$/.test(duration.trim())) {
    ms = 0;
    for (const [, amount, unit] of duration.trim().matchAll(/(\d+)(ms|s|m|h|d|w)/g)) {
      ms += Number(amount) * (unitMs[unit as string] as number);
    }
  } else {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${what} '${String(duration)}' is not a duration: use milliseconds or text like '90s', '15m', '1h30m', '3d'`,
      { actual: String(duration) },
    );
  }
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > durationMaxMs) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${what} must be 0 to 100 years of whole milliseconds, got ${String(duration)}`,
      { actual: String(duration) },
    );
  }
  return ms;
}
