import { ErrorCode, LoomError } from '../../errors.js';

/** Most attempts one step may have in one budget, the first included. */
export const stepAttemptsMax = 100;
/** Longest backoff between two attempts: 100 years, as for a durable sleep. */
const backoffMsMax = 100 * 365 * 24 * 3_600_000;

/**
 * Exponential backoff between a step's attempts: `min(maxMs, initialMs × factor^(n−1))` after
 * failed attempt n.
 */
export interface StepBackoff {
  /** Delay after the first failed attempt. Default 100. */
  initialMs?: number;
  /** Growth per attempt, ≥ 1. Default 2. */
  factor?: number;
  /** Cap on any one delay, ≥ `initialMs`. Default max(10 000, initialMs). */
  maxMs?: number;
  /**
   * `'full'` (default): a uniform delay in [0, computed], so steps failing together do not retry
   * together. `'none'`: exactly the computed delay. The delay is recorded, so a replay never
   * draws it again.
   */
  jitter?: 'none' | 'full';
}

/**
 * How a step is retried when its effect throws. Every failed attempt is journaled
 * (`step.attempt_failed`: attempt number, error, next retry time) and the wait before the next
 * one is a durable timer, so a crash neither restarts the count nor forgets the wait.
 */
export interface StepRetryPolicy {
  /** Most attempts in all, the first included: 1 … {@link stepAttemptsMax}. */
  attempts: number;
  backoff?: StepBackoff;
  /** Whether an error is worth another attempt. Default: every error. */
  retryable?: (error: unknown) => boolean;
  /** Source of jitter, in [0, 1). Default `Math.random` (the drawn delay is recorded). */
  random?: () => number;
}

/** A checked {@link StepRetryPolicy}: the attempt budget and the delay after each failure. */
export interface ResolvedRetry {
  readonly attempts: number;
  readonly retryable: ((error: unknown) => boolean) | undefined;
  /** The delay after failed attempt `n` (1-based). */
  delayMs(failedAttempt: number): number;
}

function invalid(path: string, actual: unknown, what: string): never {
  throw new LoomError(ErrorCode.INVALID_ARGUMENT, `step retry ${path} ${what}`, {
    path: `retry.${path}`,
    actual: typeof actual === 'function' ? 'function' : actual,
  });
}

function number(
  path: string,
  value: unknown,
  fallback: number,
  min: number,
  max: number,
  integer: boolean,
): number {
  if (value === undefined) return fallback;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < min ||
    value > max ||
    (integer && !Number.isSafeInteger(value))
  ) {
    invalid(path, value, `must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}]`);
  }
  return value;
}

/**
 * Checks a retry policy once, when a step (or a runtime) is given it. Throws `INVALID_ARGUMENT`
 * naming the option at fault (`fields.path`).
 */
export function resolveRetry(policy: StepRetryPolicy): ResolvedRetry {
  if (typeof policy !== 'object' || policy === null) invalid('', policy, 'must be an object');
  const attempts = number('attempts', policy.attempts, Number.NaN, 1, stepAttemptsMax, true);
  if (Number.isNaN(attempts)) invalid('attempts', undefined, 'is required');
  if (policy.retryable !== undefined && typeof policy.retryable !== 'function') {
    invalid('retryable', policy.retryable, 'must be a function');
  }
  if (policy.random !== undefined && typeof policy.random !== 'function') {
    invalid('random', policy.random, 'must be a function');
  }
  const backoff = policy.backoff ?? {};
  if (typeof backoff !== 'object' || backoff === null) {
    invalid('backoff', backoff, 'must be an object');
  }
  const initialMs = number('backoff.initialMs', backoff.initialMs, 100, 0, backoffMsMax, true);
  const factor = number('backoff.factor', backoff.factor, 2, 1, 1_000, false);
  const maxMs = number(
    'backoff.maxMs',
    backoff.maxMs,
    Math.max(10_000, initialMs),
    initialMs,
    backoffMsMax,
    true,
  );
  const jitter = backoff.jitter ?? 'full';
  if (jitter !== 'full' && jitter !== 'none') {
    invalid('backoff.jitter', jitter, "must be 'full' or 'none'");
  }
  const draw = policy.random ?? Math.random;
  return {
    attempts,
    retryable: policy.retryable,
    delayMs: (failedAttempt) => {
      const computedMs = Math.min(maxMs, Math.round(initialMs * factor ** (failedAttempt - 1)));
      return jitter === 'full'
        ? Math.min(computedMs, Math.floor(draw() * (computedMs + 1)))
        : computedMs;
    },
  };
}
