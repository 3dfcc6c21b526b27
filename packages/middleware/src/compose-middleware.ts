import type { AttemptContext, Effect, EffectContext, EffectMiddleware } from './effect-context.js';
import { LoomError, MiddlewareErrorCode } from './errors.js';

/**
 * Composes middleware into one; the first is the outermost. An empty chain is the identity.
 *
 * Error codes: `INVALID_ARGUMENT` when an element is not a function.
 *
 * @example
 * const resilient = composeMiddleware(
 *   retryMiddleware({ attempts: 3 }),
 *   timeoutMiddleware({ ms: 5_000 }),
 * );
 */
export function composeMiddleware(...chain: readonly EffectMiddleware[]): EffectMiddleware {
  chain.forEach((middleware, index) => {
    if (typeof middleware !== 'function') {
      // The one likely mix-up: passing tracingMiddleware's result, which has two halves.
      const hint =
        typeof (middleware as { step?: unknown } | null)?.step === 'function'
          ? ': pass the .step and .attempt halves of a tracingMiddleware(...) result'
          : '';
      throw new LoomError(
        MiddlewareErrorCode.INVALID_ARGUMENT,
        `composeMiddleware: element ${index} is ${typeof middleware}, not a middleware function${hint}`,
        { option: `chain[${index}]`, actual: typeof middleware },
      );
    }
  });
  return <T>(next: Effect<T>): Effect<T> => chain.reduceRight((inner, mw) => mw(inner), next);
}

/** What a wrapped effect accepts: the kernel's effect context, with or without an attempt. */
export type WrappableContext = EffectContext & { readonly attempt?: number };

/**
 * Wraps an effect function in a middleware: the result takes the kernel's effect context
 * (attempt 1 unless the context carries one) and always returns a promise. A synchronous
 * throw of `effect` becomes a rejection; nothing else about its result or error changes.
 *
 * Error codes: `INVALID_ARGUMENT` when `middleware` or `effect` is not a function.
 *
 * @example
 * await ctx.step('charge', wrapEffect(resilient, (effect) =>
 *   payments.charge(order, { idempotencyKey: effect.idempotencyKey }),
 * ));
 */
export function wrapEffect<T>(
  middleware: EffectMiddleware,
  effect: (ctx: AttemptContext) => T | Promise<T>,
): (ctx: WrappableContext) => Promise<T> {
  for (const [option, value] of [
    ['middleware', middleware],
    ['effect', effect],
  ] as const) {
    if (typeof value !== 'function') {
      throw new LoomError(
        MiddlewareErrorCode.INVALID_ARGUMENT,
        `wrapEffect: '${option}' must be a function, got ${typeof value}`,
        { option, actual: typeof value },
      );
    }
  }
  const run = middleware<T>(async (ctx) => effect(ctx));
  return (ctx) => run(ctx.attempt === undefined ? { ...ctx, attempt: 1 } : (ctx as AttemptContext));
}
