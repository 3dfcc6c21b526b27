import type { Clock } from '@loom/event-runtime';

/**
 * What an effect receives. Structurally the kernel's `EffectContext` (`@loom/event-runtime`):
 * a step's effect context can be passed here as it is, no import of the kernel needed.
 */
export interface EffectContext {
  readonly executionId: string;
  readonly stepIndex: number;
  readonly stepName: string;
  /**
   * `${executionId}/${stepIndex}`: stable across re-runs and across retries, so the outside
   * world can deduplicate.
   */
  readonly idempotencyKey: string;
  /** Aborts on cancel, loss of ownership, shutdown, or (downstream of a timeout) the timeout. */
  readonly signal: AbortSignal;
  /**
   * The clock of the runtime running the effect (a kernel step passes its runtime's). Retry
   * backoff and timeouts arm their timers on it unless their options inject a timer.
   */
  readonly clock?: Clock;
}

/** The context a middleware and a wrapped effect see: the effect context plus the attempt. */
export interface AttemptContext extends EffectContext {
  /** 1 on the first call; `retryMiddleware` passes 2, 3, … to what it wraps. */
  readonly attempt: number;
}

/** An effect as middleware sees it: always async, always given an {@link AttemptContext}. */
export type Effect<T> = (ctx: AttemptContext) => Promise<T>;

/**
 * A middleware takes the rest of the chain (`next`) and returns an effect that runs around it.
 * It must hand `next` a context (it may derive one: another `signal`, another `attempt`) and
 * should change nothing else than what it documents.
 *
 * @example
 * const stamp: EffectMiddleware = (next) => async (ctx) => {
 *   console.log('attempt', ctx.attempt, 'of', ctx.stepName);
 *   return next(ctx);
 * };
 */
export type EffectMiddleware = <T>(next: Effect<T>) => Effect<T>;
