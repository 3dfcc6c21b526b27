import type { AttemptContext, EffectMiddleware } from '../effect-context.js';
import { LoomError, MiddlewareErrorCode } from '../errors.js';
import type { HookErrorHandler } from '../hook-error-handler.js';
import { callHook, warnHookError } from '../internal/call-hook.js';
import {
  checkOptionsObject,
  optionalFunction,
  optionalNumber,
  requireNumber,
} from '../internal/options.js';
import { resolveTime } from '../internal/resolve-time.js';
import { MiddlewareLimits } from '../limits.js';
import type { NowClock } from '../time.js';

/** `closed`: calls pass. `open`: calls are refused. `half-open`: a few probes test recovery. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** A transition of the breaker, as `onStateChange` receives it. */
export interface CircuitStateChange {
  from: CircuitState;
  to: CircuitState;
  atMs: number;
}

/** Options of {@link circuitBreakerMiddleware}; every one is validated when the middleware is made. */
export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit: an integer ≥ 1. */
  failureThreshold: number;
  /** How long the circuit stays open before it lets probes through: an integer ≥ 1 ms. */
  resetAfterMs: number;
  /** Most probes in flight while half-open. Default 1; at most `MiddlewareLimits.halfOpenMax`. */
  halfOpenMax?: number;
  clock?: NowClock;
  /**
   * Whether an error says the dependency is unhealthy. Default: every error. An error this
   * rejects counts as a success (the dependency answered), e.g. a validation failure.
   */
  isFailure?: (error: unknown) => boolean;
  /** Told of every transition. A throw here never reaches the effect's caller. */
  onStateChange?: (change: CircuitStateChange) => void;
  /** Where an `onStateChange` throw goes. Default: a process warning. */
  onHookError?: HookErrorHandler;
}

const where = 'circuitBreakerMiddleware';

/**
 * A circuit breaker for one dependency (create one instance per dependency; every effect
 * wrapped with it shares its state). Closed, it counts consecutive failures and opens at
 * `failureThreshold`; open, it refuses calls without running them; after `resetAfterMs` it is
 * half-open and lets `halfOpenMax` probes through: a probe's success closes it, a failure opens
 * it again. An outcome of a call started before the latest transition is ignored, so a slow
 * call from before the circuit opened cannot close it. Results and errors pass through unchanged.
 *
 * Error codes: `CIRCUIT_OPEN` (`fields.state`, `retryAfterMs` while open). `INVALID_ARGUMENT`
 * for a bad option.
 *
 * @example
 * const paymentsBreaker = circuitBreakerMiddleware({ failureThreshold: 5, resetAfterMs: 30_000 });
 */
export function circuitBreakerMiddleware(options: CircuitBreakerOptions): EffectMiddleware {
  const o = checkOptionsObject(where, options, [
    'failureThreshold',
    'resetAfterMs',
    'halfOpenMax',
    'clock',
    'isFailure',
    'onStateChange',
    'onHookError',
  ]);
  const failureThreshold = requireNumber(where, 'failureThreshold', o.failureThreshold, {
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    integer: true,
  });
  const resetAfterMs = requireNumber(where, 'resetAfterMs', o.resetAfterMs, {
    min: 1,
    max: MiddlewareLimits.timerMsMax,
    integer: true,
  });
  const halfOpenMax = optionalNumber(
    where,
    'halfOpenMax',
    o.halfOpenMax,
    { min: 1, max: MiddlewareLimits.halfOpenMax, integer: true },
    1,
  );
  const isFailure = optionalFunction<(error: unknown) => boolean>(where, 'isFailure', o.isFailure);
  const onStateChange = optionalFunction<(change: CircuitStateChange) => void>(
    where,
    'onStateChange',
    o.onStateChange,
  );
  const onHookError =
    optionalFunction<HookErrorHandler>(where, 'onHookError', o.onHookError) ?? warnHookError;
  const { clock } = resolveTime(where, o);

  let state: CircuitState = 'closed';
  /** Bumped on every transition; outcomes of calls from an older generation are ignored. */
  let generation = 0;
  let consecutiveFailures = 0;
  let openedAtMs = 0;
  let probesInFlight = 0;

  const moveTo = (to: CircuitState, atMs: number) => {
    const from = state;
    state = to;
    generation += 1;
    consecutiveFailures = 0;
    probesInFlight = 0;
    if (to === 'open') openedAtMs = atMs;
    if (onStateChange !== undefined) callHook(onStateChange, { from, to, atMs }, onHookError);
  };

  /** Admits a call (returning its generation) or returns the error that refuses it. */
  const admit = (ctx: AttemptContext): { generation: number } | LoomError => {
    const nowMs = clock.now();
    if (state === 'open' && nowMs - openedAtMs >= resetAfterMs) moveTo('half-open', nowMs);
    if (state === 'open') {
      return circuitOpen(ctx, 'open', openedAtMs + resetAfterMs - nowMs, failureThreshold);
    }
    if (state === 'half-open') {
      if (probesInFlight >= halfOpenMax) return circuitOpen(ctx, 'half-open', 0, halfOpenMax);
      probesInFlight += 1;
    }
    return { generation };
  };

  const record = (callGeneration: number, healthy: boolean) => {
    if (callGeneration !== generation) return;
    if (state === 'half-open') {
      probesInFlight -= 1;
      moveTo(healthy ? 'closed' : 'open', clock.now());
      return;
    }
    if (healthy) {
      consecutiveFailures = 0;
      return;
    }
    consecutiveFailures += 1;
    if (consecutiveFailures >= failureThreshold) moveTo('open', clock.now());
  };

  return (next) => async (ctx) => {
    const admitted = admit(ctx);
    if (admitted instanceof LoomError) throw admitted;
    let value: Awaited<ReturnType<typeof next>>;
    try {
      value = await next(ctx);
    } catch (error) {
      record(admitted.generation, isFailure !== undefined && !isFailure(error));
      throw error;
    }
    record(admitted.generation, true);
    return value;
  };
}

function circuitOpen(
  ctx: AttemptContext,
  state: 'open' | 'half-open',
  retryAfterMs: number,
  limit: number,
): LoomError {
  const why =
    state === 'open'
      ? `${limit} consecutive failures opened the circuit; it lets a probe through in ${retryAfterMs} ms`
      : `the circuit is half-open and its ${limit} probe(s) are in flight`;
  return new LoomError(
    MiddlewareErrorCode.CIRCUIT_OPEN,
    `step '${ctx.stepName}' (execution ${ctx.executionId}, step ${ctx.stepIndex}) was not run: ` +
      `${why}. Retry later, or check the dependency`,
    {
      executionId: ctx.executionId,
      stepIndex: ctx.stepIndex,
      stepName: ctx.stepName,
      attempt: ctx.attempt,
      state,
      retryAfterMs,
    },
  );
}
