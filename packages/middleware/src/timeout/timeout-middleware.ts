import type { AttemptContext, EffectMiddleware } from '../effect-context.js';
import { LoomError, MiddlewareErrorCode } from '../errors.js';
import { checkOptionsObject, requireNumber } from '../internal/options.js';
import { resolveTime, timerFor } from '../internal/resolve-time.js';
import { MiddlewareLimits } from '../limits.js';
import type { SetTimer } from '../time.js';

/** Options of {@link timeoutMiddleware}. */
export interface TimeoutOptions {
  /** How long one call may run: an integer, 1 … `MiddlewareLimits.timerMsMax`. */
  ms: number;
  /** Default: the effect's clock (`ctx.clock`, the runtime's), else the real `setTimeout`. */
  setTimer?: SetTimer;
}

const where = 'timeoutMiddleware';

/**
 * Bounds each call to `ms`. Downstream gets a derived `signal` that aborts when the caller's
 * does (same reason) or when the time is up (reason: the `TIMEOUT` error). At the timeout the
 * call rejects at once; an effect that ignores its signal is abandoned, its late result or
 * error dropped. A call that settles in time passes through unchanged.
 *
 * Error codes: `TIMEOUT` (`fields.timeoutMs`, `attempt`, …). `INVALID_ARGUMENT` for a bad option.
 *
 * @example
 * const bounded = timeoutMiddleware({ ms: 5_000 });
 */
export function timeoutMiddleware(options: TimeoutOptions): EffectMiddleware {
  const o = checkOptionsObject(where, options, ['ms', 'setTimer']);
  const ms = requireNumber(where, 'ms', o.ms, {
    min: 1,
    max: MiddlewareLimits.timerMsMax,
    integer: true,
  });
  const time = resolveTime(where, o);

  return (next) => (ctx) => {
    const controller = new AbortController();
    const parent = ctx.signal;
    const onParentAbort = () => controller.abort(parent.reason);
    if (parent.aborted) onParentAbort();
    else parent.addEventListener('abort', onParentAbort, { once: true });

    return new Promise((resolve, reject) => {
      let settled = false;
      let cancelTimer = () => {};
      const settle = () => {
        settled = true;
        cancelTimer();
        parent.removeEventListener('abort', onParentAbort);
      };
      cancelTimer = timerFor(time, ctx)(() => {
        if (settled) return;
        settle();
        const error = timeoutError(ctx, ms);
        controller.abort(error);
        reject(error);
      }, ms);

      let running: ReturnType<typeof next>;
      try {
        running = next({ ...ctx, signal: controller.signal });
      } catch (error) {
        running = Promise.reject(error);
      }
      // Both handlers are attached even after a timeout, so a late rejection of an abandoned
      // effect is dropped here instead of surfacing as an unhandled rejection.
      running.then(
        (value) => {
          if (settled) return;
          settle();
          resolve(value);
        },
        (error: unknown) => {
          if (settled) return;
          settle();
          reject(error);
        },
      );
    });
  };
}

function timeoutError(ctx: AttemptContext, timeoutMs: number): LoomError {
  return new LoomError(
    MiddlewareErrorCode.TIMEOUT,
    `step '${ctx.stepName}' (execution ${ctx.executionId}, step ${ctx.stepIndex}) attempt ` +
      `${ctx.attempt} ran past its ${timeoutMs} ms timeout; its signal was aborted. Raise 'ms', ` +
      'or make the effect honour its signal so it stops instead of running on abandoned',
    {
      executionId: ctx.executionId,
      stepIndex: ctx.stepIndex,
      stepName: ctx.stepName,
      attempt: ctx.attempt,
      timeoutMs,
    },
  );
}
