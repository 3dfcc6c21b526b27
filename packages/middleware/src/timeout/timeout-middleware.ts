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
 * error dropped. A call that settles in time passes through unchanged. The derived signal is
 * made when downstream first reads it (an effect that never reads it costs no AbortController);
 * one first read after the call settled follows the caller's signal as it is then.
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
    // The derived signal is made when downstream first reads it: an AbortController and a
    // listener on the caller's signal (which makes that one too, when the kernel made it lazily)
    // cost more than the rest of a call, and most effects never read `signal`. Read before the
    // call settled, it is what an eager one would be; at the timeout it is made (and aborted)
    // whether read or not, so an abandoned effect that reads it later sees the TIMEOUT.
    let controller: AbortController | undefined;
    let parent: AbortSignal | undefined;
    let settled = false;
    const onParentAbort = () => controller?.abort((parent as AbortSignal).reason);
    const derived = (): AbortSignal => {
      if (controller === undefined) {
        controller = new AbortController();
        parent = ctx.signal;
        if (parent.aborted) onParentAbort();
        else if (!settled) parent.addEventListener('abort', onParentAbort, { once: true });
      }
      return controller.signal;
    };

    return new Promise((resolve, reject) => {
      let cancelTimer = () => {};
      const settle = () => {
        settled = true;
        cancelTimer();
        parent?.removeEventListener('abort', onParentAbort);
      };
      cancelTimer = timerFor(time, ctx)(() => {
        if (settled) return;
        derived();
        settle();
        const error = timeoutError(ctx, ms);
        controller?.abort(error);
        reject(error);
      }, ms);

      let running: ReturnType<typeof next>;
      try {
        running = next(new TimedContext(ctx, derived) as unknown as AttemptContext);
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

/** `signal` of every TimedContext: one accessor, so their objects share one shape. */
let timedContextSignal: PropertyDescriptor;

/**
 * What the timeout hands down: the caller's context's own fields (as a spread copies them, but
 * never reading its `signal`) and the derived `signal`: one class, so the object keeps fast
 * properties (a literal with a getter is a dictionary, a hash table per call).
 */
class TimedContext {
  /**
   * An own enumerable accessor, one getter for every object of the class (so they share one
   * shape), called only when read: a spread (`{ ...ctx }`, as middleware pass contexts on)
   * carries it.
   */
  declare readonly signal: AbortSignal;
  static {
    timedContextSignal = {
      get(this: TimedContext): AbortSignal {
        return this.#derived();
      },
      enumerable: true,
      configurable: true,
    };
  }
  readonly #derived: () => AbortSignal;
  constructor(ctx: AttemptContext, derived: () => AbortSignal) {
    const fields = this as unknown as Record<PropertyKey, unknown>;
    const from = ctx as unknown as Record<PropertyKey, unknown>;
    for (const key in ctx) {
      if (key !== 'signal' && Object.hasOwn(ctx, key)) fields[key] = from[key];
    }
    for (const key of Object.getOwnPropertySymbols(ctx)) {
      if (Object.prototype.propertyIsEnumerable.call(ctx, key)) fields[key] = from[key];
    }
    this.#derived = derived;
    Object.defineProperty(this, 'signal', timedContextSignal);
  }
}
