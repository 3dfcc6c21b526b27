import type { AttemptContext, EffectMiddleware } from '../effect-context.js';
import type { HookErrorHandler } from '../hook-error-handler.js';
import { callHook, warnHookError } from '../internal/call-hook.js';
import { checkOptionsObject, optionalFunction, requireFunction } from '../internal/options.js';
import { resolveTime } from '../internal/resolve-time.js';
import type { NowClock } from '../time.js';

/** One call through the middleware: one attempt when placed inside `retryMiddleware`. */
export interface EffectTiming {
  executionId: string;
  stepIndex: number;
  stepName: string;
  idempotencyKey: string;
  attempt: number;
  startedAtMs: number;
  endedAtMs: number;
  durationMs: number;
  outcome: 'ok' | 'error';
  /** What the call threw, untouched (present when `outcome` is `'error'`). */
  error?: unknown;
}

/** Options of {@link effectTimingMiddleware}. */
export interface EffectTimingOptions {
  /** Called once per call, after it settled. A throw here never reaches the effect's caller. */
  onRecord: (timing: EffectTiming) => void;
  /** Default: the monotonic high-resolution clock (sub-millisecond durations). */
  clock?: NowClock;
  /** Where an `onRecord` throw goes. Default: a process warning. */
  onHookError?: HookErrorHandler;
}

const where = 'effectTimingMiddleware';

/**
 * Measures each call: start, end, duration and outcome, handed to `onRecord`. The result and
 * the thrown error pass through unchanged (same value, same identity).
 *
 * Error codes: `INVALID_ARGUMENT` for a bad option.
 *
 * @example
 * const timings: EffectTiming[] = [];
 * const timed = effectTimingMiddleware({ onRecord: (t) => timings.push(t) });
 */
export function effectTimingMiddleware(options: EffectTimingOptions): EffectMiddleware {
  const o = checkOptionsObject(where, options, ['onRecord', 'clock', 'onHookError']);
  const onRecord = requireFunction<EffectTimingOptions['onRecord']>(where, 'onRecord', o.onRecord);
  const onHookError =
    optionalFunction<HookErrorHandler>(where, 'onHookError', o.onHookError) ?? warnHookError;
  const { clock } = resolveTime(where, o);

  const record = (ctx: AttemptContext, startedAtMs: number, error?: { thrown: unknown }) => {
    const endedAtMs = clock.now();
    const timing: EffectTiming = {
      executionId: ctx.executionId,
      stepIndex: ctx.stepIndex,
      stepName: ctx.stepName,
      idempotencyKey: ctx.idempotencyKey,
      attempt: ctx.attempt,
      startedAtMs,
      endedAtMs,
      durationMs: endedAtMs - startedAtMs,
      outcome: error === undefined ? 'ok' : 'error',
    };
    if (error !== undefined) timing.error = error.thrown;
    callHook(onRecord, timing, onHookError);
  };

  return (next) => async (ctx) => {
    const startedAtMs = clock.now();
    let value: Awaited<ReturnType<typeof next>>;
    try {
      value = await next(ctx);
    } catch (thrown) {
      record(ctx, startedAtMs, { thrown });
      throw thrown;
    }
    record(ctx, startedAtMs);
    return value;
  };
}
