import { type Clock, systemClock } from '@loom/event-runtime';
import {
  type BackoffOptions,
  composeMiddleware,
  type EffectMiddleware,
  retryMiddleware,
  type SetTimer,
} from '@loom/middleware';
import { isLoomError, isRetryableModelError, LoomError, ReasoningErrorCode } from '../errors.js';
import { continueStream, type OpenedStream, openStream } from '../internal/open-stream.js';
import { sleep, timerOf } from '../internal/time.js';
import type { ModelDelta, ModelProvider, ModelRequest } from '../model-provider.js';

/** Default {@link ModelRetryOptions.retryAfterMsMax}: a minute. */
export const defaultRetryAfterMsMax = 60_000;

/** Options of {@link withRetry}. */
export interface ModelRetryOptions {
  /** Most calls in all, the first included (1 … 100). */
  attempts: number;
  /** Exponential backoff between attempts (`@loom/middleware`'s). Default 100 ms × 2, full jitter. */
  backoff?: BackoffOptions;
  /**
   * A rate limit asking to wait longer than this is not retried here: it goes to the caller (a
   * router moves to another route). Default 60 000.
   */
  retryAfterMsMax?: number;
  /** Source of jitter, in [0, 1). */
  random?: () => number;
  /** Time for the waits. Default: the wall clock and `setTimeout`. */
  clock?: Pick<Clock, 'now'>;
  setTimer?: SetTimer;
}

/**
 * Wraps a provider in `@loom/middleware`'s retry: `MODEL_RATE_LIMITED`, `MODEL_UNAVAILABLE` and
 * `MODEL_TIMEOUT` are tried again, up to `attempts` calls; other failures go to the caller at once.
 * A `retryAfterMs` (a rate limit's, or an outage's: a 503/529 may send `retry-after`) is
 * honoured: the next attempt waits that long, then the backoff.
 * A stream is retried only until its first delta: after that a failure goes to the caller.
 *
 * Error codes: the last attempt's `MODEL_*` error, with `fields.attempts`; `INVALID_ARGUMENT`
 * for a bad option (from `retryMiddleware`).
 *
 * @example
 * const resilient = withRetry(fromAiSdk(model), { attempts: 4, backoff: { initialMs: 500 } });
 */
export function withRetry(provider: ModelProvider, options: ModelRetryOptions): ModelProvider {
  const retryAfterMsMax = options.retryAfterMsMax ?? defaultRetryAfterMsMax;
  const clock = options.clock ?? systemClock;
  const setTimer = timerOf(clock, options.setTimer);
  const honoured = (error: unknown) => {
    const wait = retryAfterOf(error);
    return wait === undefined || wait <= retryAfterMsMax;
  };
  const retry = retryMiddleware({
    attempts: options.attempts,
    ...(options.backoff !== undefined ? { backoff: options.backoff } : {}),
    ...(options.random !== undefined ? { random: options.random } : {}),
    clock,
    setTimer,
    retryable: (error) => isRetryableModelError(error) && honoured(error),
  });
  // Inside the retry: before a rate-limited attempt's error reaches the retry's backoff, wait out
  // what the server asked for (not after the last attempt, and not past the cap).
  const waitRetryAfter: EffectMiddleware = (next) => async (ctx) => {
    try {
      return await next(ctx);
    } catch (error) {
      const wait = retryAfterOf(error);
      if (wait !== undefined && wait <= retryAfterMsMax && ctx.attempt < options.attempts) {
        await sleep(wait, setTimer, ctx.signal);
      }
      throw error;
    }
  };
  const chain = composeMiddleware(retry, waitRetryAfter);
  const run = <T>(request: ModelRequest, call: () => Promise<T>): Promise<T> =>
    chain<T>(() => call())({
      executionId: '',
      stepIndex: 0,
      stepName: `model call to ${provider.id}`,
      idempotencyKey: '',
      signal: request.signal ?? new AbortController().signal,
      attempt: 1,
    }).catch((error: unknown) => {
      throw unwrapExhausted(error);
    });

  return {
    id: provider.id,
    generate: (request) => run(request, () => provider.generate(request)),
    stream: (request) =>
      retriedStream(request, () => run(request, () => opened(provider, request))),
    ...(provider.warm !== undefined ? { warm: () => provider.warm!() } : {}),
  };
}

async function opened(provider: ModelProvider, request: ModelRequest): Promise<OpenedStream> {
  const stream = await openStream(provider, request);
  if (stream === undefined) {
    throw new LoomError(
      ReasoningErrorCode.MODEL_BAD_RESPONSE,
      `the stream of ${provider.id} ended without a single delta (not even its finish)`,
      { provider: provider.id },
    );
  }
  return stream;
}

async function* retriedStream(
  _request: ModelRequest,
  open: () => Promise<OpenedStream>,
): AsyncGenerator<ModelDelta> {
  yield* continueStream(await open());
}

function retryAfterOf(error: unknown): number | undefined {
  // A 503 or 529 may say when to come back, as a 429 does.
  if (
    !isLoomError(error, ReasoningErrorCode.MODEL_RATE_LIMITED) &&
    !isLoomError(error, ReasoningErrorCode.MODEL_UNAVAILABLE)
  ) {
    return undefined;
  }
  const wait = error.fields.retryAfterMs;
  return typeof wait === 'number' ? wait : undefined;
}

/** The caller sees the model's own code (a router falls back on it), with the attempt count. */
function unwrapExhausted(error: unknown): unknown {
  if (!isLoomError(error) || (error.code as string) !== 'RETRIES_EXHAUSTED') return error;
  const last = error.cause;
  if (!isLoomError(last)) return error;
  const attempts = error.fields.attempts;
  return new LoomError(
    last.code,
    `${last.message} (after ${String(attempts)} attempts)`,
    { ...last.fields, attempts },
    error,
  );
}
