import type { AttemptContext, EffectMiddleware } from '../effect-context.js';
import type { HookErrorHandler } from '../hook-error-handler.js';
import { callHook, warnHookError } from '../internal/call-hook.js';
import { errorText } from '../internal/error-text.js';
import { checkOptionsObject, optionalFunction, requireFunction } from '../internal/options.js';
import { resolveTime } from '../internal/resolve-time.js';
import type { NowClock } from '../time.js';

/** One structured record per call (per attempt when placed inside `retryMiddleware`). */
export interface EffectLogRecord {
  /** `'info'` for a success, `'error'` for a failed attempt (retried or not). */
  level: 'info' | 'error';
  message: string;
  executionId: string;
  stepIndex: number;
  stepName: string;
  idempotencyKey: string;
  attempt: number;
  durationMs: number;
  outcome: 'ok' | 'error';
  /** `code` of a thrown `LoomError`-shaped error (any object with a string `code`). */
  errorCode?: string;
  /** One line describing what was thrown; never throws to build. */
  errorMessage?: string;
  /** What was thrown, untouched, for loggers that serialize errors themselves. */
  error?: unknown;
}

/** Options of {@link loggingMiddleware}. */
export interface LoggingOptions {
  /** Called once per call, after it settled. A throw here never reaches the effect's caller. */
  log: (record: EffectLogRecord) => void;
  clock?: NowClock;
  /** Where a `log` throw goes. Default: a process warning. */
  onHookError?: HookErrorHandler;
}

const where = 'loggingMiddleware';

/**
 * Hands `log` one structured record per call: who (execution, step, attempt), how long, and
 * how it ended. The result and the thrown error pass through unchanged.
 *
 * Error codes: `INVALID_ARGUMENT` for a bad option.
 *
 * @example
 * const logging = loggingMiddleware({ log: (record) => logger[record.level](record) });
 */
export function loggingMiddleware(options: LoggingOptions): EffectMiddleware {
  const o = checkOptionsObject(where, options, ['log', 'clock', 'onHookError']);
  const log = requireFunction<LoggingOptions['log']>(where, 'log', o.log);
  const onHookError =
    optionalFunction<HookErrorHandler>(where, 'onHookError', o.onHookError) ?? warnHookError;
  const { clock } = resolveTime(where, o);

  const emit = (ctx: AttemptContext, startedAtMs: number, failure?: { thrown: unknown }) => {
    const ok = failure === undefined;
    const record: EffectLogRecord = {
      level: ok ? 'info' : 'error',
      message: `step '${ctx.stepName}' attempt ${ctx.attempt} ${ok ? 'succeeded' : 'failed'}`,
      executionId: ctx.executionId,
      stepIndex: ctx.stepIndex,
      stepName: ctx.stepName,
      idempotencyKey: ctx.idempotencyKey,
      attempt: ctx.attempt,
      durationMs: clock.now() - startedAtMs,
      outcome: ok ? 'ok' : 'error',
    };
    if (failure !== undefined) {
      const code = codeOf(failure.thrown);
      if (code !== undefined) record.errorCode = code;
      record.errorMessage = errorText(failure.thrown);
      record.error = failure.thrown;
    }
    callHook(log, record, onHookError);
  };

  return (next) => async (ctx) => {
    const startedAtMs = clock.now();
    let value: Awaited<ReturnType<typeof next>>;
    try {
      value = await next(ctx);
    } catch (thrown) {
      emit(ctx, startedAtMs, { thrown });
      throw thrown;
    }
    emit(ctx, startedAtMs);
    return value;
  };
}

function codeOf(thrown: unknown): string | undefined {
  if (typeof thrown !== 'object' || thrown === null) return undefined;
  try {
    const code = (thrown as { code?: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined; // a throwing getter or a revoked proxy: no code to report
  }
}
