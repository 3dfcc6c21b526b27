import type { AttemptContext, EffectMiddleware } from '../effect-context.js';
import { LoomError, MiddlewareErrorCode } from '../errors.js';
import {
  checkOptionsObject,
  optionalChoice,
  optionalNumber,
  requireNumber,
} from '../internal/options.js';
import { resolveTime } from '../internal/resolve-time.js';
import { MiddlewareLimits } from '../limits.js';
import type { TimeOptions } from '../time.js';

/** Options of {@link rateLimitMiddleware}; every one is validated when the middleware is made. */
export interface RateLimitOptions extends TimeOptions {
  /** Tokens added per `intervalMs`, continuously (not in one lump): a number > 0. */
  tokensPerInterval: number;
  /** An integer ≥ 1 ms. */
  intervalMs: number;
  /** Bucket size: calls that may go at once after a quiet spell. Default `⌈tokensPerInterval⌉`. */
  burst?: number;
  /** With no token free: `'wait'` (default; FIFO, abortable by `ctx.signal`) or `'reject'`. */
  onLimit?: 'wait' | 'reject';
  /** Most calls waiting at once; beyond it a call is rejected. Default and cap: `MiddlewareLimits.rateLimitQueueMax`. */
  queueMax?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
  signal: AbortSignal;
  onAbort: () => void;
}

const where = 'rateLimitMiddleware';

/**
 * A token bucket for one dependency (one instance per dependency; every effect wrapped with
 * it shares the bucket). Each call takes a token when it starts; the bucket holds `burst`
 * tokens, starts full and refills at `tokensPerInterval` per `intervalMs`. With no token free
 * a call waits its turn (first come, first served; an abort of its `ctx.signal` takes it out of
 * line and rejects with `signal.reason`) or, with `onLimit: 'reject'`, is rejected. A call that
 * gets a token runs unchanged.
 *
 * Error codes: `RATE_LIMITED` (`fields.reason`: `'no_token'` or `'queue_full'`;
 * `retryAfterMs`). `INVALID_ARGUMENT` for a bad option.
 *
 * @example
 * const modelLimit = rateLimitMiddleware({ tokensPerInterval: 50, intervalMs: 60_000, burst: 10 });
 */
export function rateLimitMiddleware(options: RateLimitOptions): EffectMiddleware {
  const o = checkOptionsObject(where, options, [
    'tokensPerInterval',
    'intervalMs',
    'burst',
    'onLimit',
    'queueMax',
    'clock',
    'setTimer',
  ]);
  const tokensPerInterval = requireNumber(where, 'tokensPerInterval', o.tokensPerInterval, {
    min: 0,
    minExclusive: true,
    max: Number.MAX_SAFE_INTEGER,
  });
  const intervalMs = requireNumber(where, 'intervalMs', o.intervalMs, {
    min: 1,
    max: MiddlewareLimits.timerMsMax,
    integer: true,
  });
  const burst = optionalNumber(
    where,
    'burst',
    o.burst,
    { min: 1, max: Number.MAX_SAFE_INTEGER, integer: true },
    Math.max(1, Math.ceil(tokensPerInterval)),
  );
  const onLimit = optionalChoice(where, 'onLimit', o.onLimit, ['wait', 'reject'], 'wait');
  const queueMax = optionalNumber(
    where,
    'queueMax',
    o.queueMax,
    { min: 0, max: MiddlewareLimits.rateLimitQueueMax, integer: true },
    MiddlewareLimits.rateLimitQueueMax,
  );
  const { clock, setTimer } = resolveTime(where, o);

  // The bucket counts in token-milliseconds (a token is `intervalMs` units, refill adds
  // `tokensPerInterval` units per ms), so integer options never meet a rounding error.
  const tokenUnits = intervalMs;
  const capacityUnits = burst * intervalMs;
  let levelUnits = capacityUnits;
  let refilledAtMs = clock.now();
  const queue: Waiter[] = [];
  let cancelTimer: (() => void) | undefined;

  const refill = () => {
    const nowMs = clock.now();
    const elapsedMs = Math.max(0, nowMs - refilledAtMs);
    levelUnits = Math.min(capacityUnits, levelUnits + elapsedMs * tokensPerInterval);
    refilledAtMs = nowMs;
  };
  const waitMs = () => Math.max(1, Math.ceil((tokenUnits - levelUnits) / tokensPerInterval));

  const drain = () => {
    cancelTimer = undefined;
    refill();
    while (queue.length > 0 && levelUnits >= tokenUnits) {
      const waiter = queue.shift()!;
      levelUnits -= tokenUnits;
      waiter.signal.removeEventListener('abort', waiter.onAbort);
      waiter.resolve();
    }
    if (queue.length > 0) cancelTimer = setTimer(drain, waitMs());
  };

  const enqueue = (ctx: AttemptContext) =>
    new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal: ctx.signal,
        onAbort: () => {
          queue.splice(queue.indexOf(waiter), 1);
          if (queue.length === 0) {
            cancelTimer?.();
            cancelTimer = undefined;
          }
          reject(ctx.signal.reason);
        },
      };
      queue.push(waiter);
      ctx.signal.addEventListener('abort', waiter.onAbort, { once: true });
      if (cancelTimer === undefined) cancelTimer = setTimer(drain, waitMs());
    });

  /** Takes a token now (returns undefined), or says how this call must wait or fail. */
  const acquire = (ctx: AttemptContext): Promise<void> | undefined => {
    refill();
    if (queue.length === 0 && levelUnits >= tokenUnits) {
      levelUnits -= tokenUnits;
      return undefined;
    }
    const retryAfterMs = waitMs() + Math.floor((queue.length * tokenUnits) / tokensPerInterval);
    if (onLimit === 'reject') throw rateLimited(ctx, 'no_token', retryAfterMs);
    if (queue.length >= queueMax) throw rateLimited(ctx, 'queue_full', retryAfterMs);
    if (ctx.signal.aborted) throw ctx.signal.reason;
    return enqueue(ctx);
  };

  return (next) => async (ctx) => {
    const waiting = acquire(ctx);
    if (waiting !== undefined) await waiting;
    return next(ctx);
  };
}

function rateLimited(
  ctx: AttemptContext,
  reason: 'no_token' | 'queue_full',
  retryAfterMs: number,
): LoomError {
  const why =
    reason === 'no_token'
      ? 'no token is free and the limiter rejects instead of waiting'
      : 'no token is free and the wait queue is full';
  return new LoomError(
    MiddlewareErrorCode.RATE_LIMITED,
    `step '${ctx.stepName}' (execution ${ctx.executionId}, step ${ctx.stepIndex}) was not run: ` +
      `${why}; a token frees in about ${retryAfterMs} ms`,
    {
      executionId: ctx.executionId,
      stepIndex: ctx.stepIndex,
      stepName: ctx.stepName,
      attempt: ctx.attempt,
      reason,
      retryAfterMs,
    },
  );
}
