import { describe, expect, it } from 'vitest';
import { composeMiddleware, wrapEffect } from './compose-middleware.js';
import type { AttemptContext, EffectMiddleware } from './effect-context.js';
import { isLoomError, MiddlewareErrorCode } from './errors.js';
import { testEffectContext } from './testing/test-effect-context.js';

/** The kernel's EffectContext, copied field for field (mutable, no attempt), to prove fit. */
interface KernelEffectContext {
  executionId: string;
  stepIndex: number;
  stepName: string;
  idempotencyKey: string;
  signal: AbortSignal;
}

const tag =
  (name: string, trail: string[]): EffectMiddleware =>
  (next) =>
  async (ctx) => {
    trail.push(`${name}:before`);
    try {
      return await next(ctx);
    } finally {
      trail.push(`${name}:after`);
    }
  };

describe('composeMiddleware and wrapEffect', () => {
  it('runs the first middleware outermost', async () => {
    const trail: string[] = [];
    const wrapped = wrapEffect(composeMiddleware(tag('a', trail), tag('b', trail)), () => {
      trail.push('effect');
      return 42;
    });
    await expect(wrapped(testEffectContext())).resolves.toBe(42);
    expect(trail).toEqual(['a:before', 'b:before', 'effect', 'b:after', 'a:after']);
  });

  it('an empty chain calls the effect directly with the same context', async () => {
    const seen: AttemptContext[] = [];
    const ctx = testEffectContext();
    const wrapped = wrapEffect(composeMiddleware(), (c) => {
      seen.push(c);
      return 'ok';
    });
    await expect(wrapped(ctx)).resolves.toBe('ok');
    expect(seen).toEqual([ctx]);
    expect(seen[0]).toBe(ctx);
  });

  it("takes the kernel's effect context as it is, and adds attempt 1", async () => {
    const kernelCtx: KernelEffectContext = {
      executionId: 'exec-9',
      stepIndex: 3,
      stepName: 'deliver',
      idempotencyKey: 'exec-9/3',
      signal: new AbortController().signal,
    };
    const wrapped: (ctx: KernelEffectContext) => Promise<AttemptContext> = wrapEffect(
      composeMiddleware(),
      (c) => c,
    );
    await expect(wrapped(kernelCtx)).resolves.toEqual({ ...kernelCtx, attempt: 1 });
  });

  it('turns a synchronous throw into a rejection with the same value', async () => {
    const thrown = { not: 'an Error' };
    const wrapped = wrapEffect(composeMiddleware(), () => {
      throw thrown;
    });
    const outcome = wrapped(testEffectContext());
    expect(outcome).toBeInstanceOf(Promise);
    await expect(outcome).rejects.toBe(thrown);
  });

  it('infers the result type of an async effect', async () => {
    const wrapped = wrapEffect(composeMiddleware(), async () => ({ id: 'r-1' }));
    const result: { id: string } = await wrapped(testEffectContext());
    expect(result.id).toBe('r-1');
  });

  it('rejects a chain element that is not a function, naming its position', () => {
    const bad = 'retry' as unknown as EffectMiddleware;
    try {
      composeMiddleware(tag('a', []), bad);
      expect.unreachable();
    } catch (error) {
      expect(isLoomError(error, MiddlewareErrorCode.INVALID_ARGUMENT)).toBe(true);
      expect((error as { fields: { option: string } }).fields.option).toBe('chain[1]');
    }
  });

  it('says what to do when handed both tracing halves as one', () => {
    const halves = { step: tag('s', []), attempt: tag('a', []) } as unknown as EffectMiddleware;
    expect(() => composeMiddleware(halves)).toThrow(/\.step and \.attempt halves/);
  });

  it('rejects a missing effect or middleware', () => {
    expect(() => wrapEffect(composeMiddleware(), undefined as never)).toThrow(/'effect'/);
    expect(() => wrapEffect(null as never, () => 1)).toThrow(/'middleware'/);
  });
});
