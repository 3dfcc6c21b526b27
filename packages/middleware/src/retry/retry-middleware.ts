import type { AttemptContext, EffectMiddleware } from '../effect-context.js';
import { isTerminalError, LoomError, MiddlewareErrorCode } from '../errors.js';
import { errorText } from '../internal/error-text.js';
import {
  checkOptionsObject,
  optionalChoice,
  optionalFunction,
  optionalNumber,
  requireNumber,
} from '../internal/options.js';
import { resolveTime, timerFor } from '../internal/resolve-time.js';
import { sleep } from '../internal/sleep.js';
import { MiddlewareLimits } from '../limits.js';
import type { TimeOptions } from '../time.js';

/** Exponential backoff between attempts: `min(maxMs, initialMs × factor^(n−1))` after attempt n. */
export interface BackoffOptions {
  /** Delay after the first failed attempt. Default 100. */
  initialMs?: number;
  /** Growth per attempt, ≥ 1. Default 2. */
  factor?: number;
  /** Cap on any one delay, ≥ `initialMs`. Default 10 000. */
  maxMs?: number;
  /**
   * `'full'` (default): a uniform delay in [0, computed], so many callers failing together do
   * not retry together. `'none'`: exactly the computed delay.
   */
  jitter?: 'none' | 'full';
}

/** Options of {@link retryMiddleware}; every one is validated when the middleware is made. */
export interface RetryOptions extends TimeOptions {
  /** Most calls in all, the first included: 1 … `MiddlewareLimits.retryAttemptsMax` (100). */
  attempts: number;
  backoff?: BackoffOptions;
  /**
   * Whether an error is worth another attempt. Default: every error. A `terminalError()` (code
   * `TERMINAL`) is never retried, whatever this says.
   */
  retryable?: (error: unknown) => boolean;
  /** Source of jitter, in [0, 1). Default `Math.random`; inject one for reproducible delays. */
  random?: () => number;
}

const where = 'retryMiddleware';

/**
 * Calls `next` again after a retryable failure, up to `attempts` calls, waiting a backoff delay
 * between them (on the injected timer, so tests and simulation own time). Each call gets
 * `attempt` 1, 2, … and the same idempotency key. The first success is returned unchanged.
 *
 * Stops early, rethrowing the error unchanged, when it is not retryable, when it is a
 * `terminalError()`, or when `ctx.signal` has aborted; an abort during a wait rejects with
 * `signal.reason` and starts no further attempt.
 *
 * Error codes: `RETRIES_EXHAUSTED` when every attempt failed with a retryable error (`fields`:
 * `attempts`, `lastError`; `cause` is the last error). `INVALID_ARGUMENT` for a bad option.
 *
 * @example
 * const retry = retryMiddleware({
 *   attempts: 5,
 *   backoff: { initialMs: 200, factor: 2, maxMs: 5_000, jitter: 'full' },
 *   retryable: (error) => !isLoomError(error, 'CIRCUIT_OPEN'),
 * });
 */
export function retryMiddleware(options: RetryOptions): EffectMiddleware {
  const o = checkOptionsObject(where, options, [
    'attempts',
    'backoff',
    'retryable',
    'random',
    'clock',
    'setTimer',
  ]);
  const attempts = requireNumber(where, 'attempts', o.attempts, {
    min: 1,
    max: MiddlewareLimits.retryAttemptsMax,
    integer: true,
  });
  const delayMs = backoffSchedule(o.backoff, optionalFunction(where, 'random', o.random));
  const retryable = optionalFunction<(error: unknown) => boolean>(where, 'retryable', o.retryable);
  const time = resolveTime(where, o);

  return (next) => async (ctx) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(attempt === ctx.attempt ? ctx : { ...ctx, attempt });
      } catch (error) {
        if (isTerminalError(error) || ctx.signal.aborted) throw error;
        if (retryable !== undefined && !retryable(error)) throw error;
        if (attempt >= attempts) throw exhausted(ctx, attempts, error);
        await sleep(delayMs(attempt), ctx.signal, timerFor(time, ctx));
      }
    }
  };
}

/** The delay after failed attempt `n` (1-based), from validated backoff options. */
function backoffSchedule(backoff: unknown, random: (() => number) | undefined) {
  const b = checkOptionsObject(
    where,
    backoff ?? {},
    ['initialMs', 'factor', 'maxMs', 'jitter'],
    'backoff',
  );
  const msRange = { min: 0, max: MiddlewareLimits.timerMsMax };
  const initialMs = optionalNumber(where, 'backoff.initialMs', b.initialMs, msRange, 100);
  const factor = optionalNumber(where, 'backoff.factor', b.factor, { min: 1, max: 1_000 }, 2);
  const maxMs = optionalNumber(
    where,
    'backoff.maxMs',
    b.maxMs,
    { min: initialMs, max: MiddlewareLimits.timerMsMax },
    Math.max(10_000, initialMs),
  );
  const jitter = optionalChoice(where, 'backoff.jitter', b.jitter, ['none', 'full'], 'full');
  const draw = random ?? Math.random;
  return (failedAttempt: number): number => {
    const computedMs = Math.min(maxMs, Math.round(initialMs * factor ** (failedAttempt - 1)));
    return jitter === 'full'
      ? Math.min(computedMs, Math.floor(draw() * (computedMs + 1)))
      : computedMs;
  };
}

function exhausted(ctx: AttemptContext, attempts: number, lastError: unknown): LoomError {
  return new LoomError(
    MiddlewareErrorCode.RETRIES_EXHAUSTED,
    `step '${ctx.stepName}' (execution ${ctx.executionId}, step ${ctx.stepIndex}) failed all ` +
      `${attempts} attempts; the last one threw ${errorText(lastError)}. Raise 'attempts', ` +
      'mark the error non-retryable, or let the step fail and retry durably',
    {
      executionId: ctx.executionId,
      stepIndex: ctx.stepIndex,
      stepName: ctx.stepName,
      attempts,
      lastError,
    },
    lastError,
  );
}
