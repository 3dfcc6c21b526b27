import { type StepBackoff, stepAttemptsMax } from '@loom/event-runtime';
import { AgentErrorCode, LoomError } from './errors.js';

/**
 * How a `read_only` or `idempotent` tool's call is retried when it throws or times out: all
 * attempts are one durable step (each failed attempt is journaled, the backoff is a durable
 * timer) and carry the same idempotency key. Data only, so it can be checked once when the
 * tool or agent is defined.
 */
export interface ToolRetry {
  /** Most attempts in all, the first included: 1 … 100. */
  attempts: number;
  /** Default: 100 ms after the first failure, doubling, at most 10 s, full jitter. */
  backoff?: StepBackoff;
}

/** The longest delay a tool's backoff may name: a day (a tool call is not a timer). */
const toolBackoffMsMax = 24 * 3_600_000;

function refuse(where: string, path: string, actual: unknown, what: string): never {
  throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, `${where}: ${path} ${what}`, {
    path,
    actual: typeof actual === 'object' ? JSON.stringify(actual) : String(actual),
  });
}

function checkNumber(
  where: string,
  path: string,
  value: unknown,
  min: number,
  max: number,
  integer: boolean,
): void {
  if (value === undefined) return;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < min ||
    value > max ||
    (integer && !Number.isSafeInteger(value))
  ) {
    refuse(
      where,
      path,
      value,
      `must be ${integer ? 'a whole number' : 'a number'} in [${min}, ${max}]`,
    );
  }
}

/**
 * Checks a tool retry policy (`retry` of a tool, `toolRetry` of an agent) and returns a frozen
 * copy. `INVALID_ARGUMENT` (with `fields.path`) for anything out of its domain.
 */
export function checkToolRetry(where: string, option: string, value: unknown): ToolRetry | false {
  if (value === false) return false;
  if (typeof value !== 'object' || value === null) {
    refuse(where, option, value, 'must be { attempts, backoff? } or false');
  }
  const { attempts, backoff, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    refuse(
      where,
      `${option}.${unknown[0]}`,
      rest[unknown[0] as string],
      'is not an option (attempts, backoff)',
    );
  }
  if (attempts === undefined) refuse(where, `${option}.attempts`, attempts, 'is required');
  checkNumber(where, `${option}.attempts`, attempts, 1, stepAttemptsMax, true);
  if (backoff === undefined) return Object.freeze({ attempts: attempts as number });
  if (typeof backoff !== 'object' || backoff === null) {
    refuse(where, `${option}.backoff`, backoff, 'must be an object');
  }
  const b = backoff as Record<string, unknown>;
  checkNumber(where, `${option}.backoff.initialMs`, b.initialMs, 0, toolBackoffMsMax, true);
  checkNumber(where, `${option}.backoff.factor`, b.factor, 1, 1_000, false);
  checkNumber(
    where,
    `${option}.backoff.maxMs`,
    b.maxMs,
    typeof b.initialMs === 'number' ? b.initialMs : 0,
    toolBackoffMsMax,
    true,
  );
  if (b.jitter !== undefined && b.jitter !== 'full' && b.jitter !== 'none') {
    refuse(where, `${option}.backoff.jitter`, b.jitter, "must be 'full' or 'none'");
  }
  return Object.freeze({
    attempts: attempts as number,
    backoff: Object.freeze({ ...(backoff as StepBackoff) }),
  });
}
