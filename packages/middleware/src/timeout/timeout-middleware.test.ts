import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { composeMiddleware, wrapEffect } from '../compose-middleware.js';
import type { AttemptContext } from '../effect-context.js';
import { isLoomError, type LoomError, MiddlewareErrorCode } from '../errors.js';
import { expectInvalidOption } from '../internal/expect-invalid-option.test-support.js';
import { MiddlewareLimits } from '../limits.js';
import { retryMiddleware } from '../retry/retry-middleware.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { timeoutMiddleware } from './timeout-middleware.js';

/** An effect that settles only when the test says so, and records the signal it got. */
function controllable<T>() {
  const calls: { signal: AbortSignal; resolve: (v: T) => void; reject: (e: unknown) => void }[] =
    [];
  const effect = (ctx: AttemptContext) =>
    new Promise<T>((resolve, reject) => calls.push({ signal: ctx.signal, resolve, reject }));
  return { calls, effect };
}

describe('timeoutMiddleware', () => {
  it('passes a result that comes in time through unchanged and cancels its timer', async () => {
    const time = new ManualClock();
    const { calls, effect } = controllable<{ id: number }>();
    const pending = wrapEffect(
      timeoutMiddleware({ ms: 1_000, setTimer: (fn, ms) => time.setTimer(fn, ms) }),
      effect,
    )(testEffectContext());
    await time.advance(999);
    const result = { id: 1 };
    calls[0]?.resolve(result);
    await expect(pending).resolves.toBe(result);
    expect(time.pendingTimers).toBe(0);
    expect(calls[0]?.signal.aborted).toBe(false);
  });

  it('passes an error that comes in time through unchanged', async () => {
    const time = new ManualClock();
    const { calls, effect } = controllable();
    const pending = wrapEffect(
      timeoutMiddleware({ ms: 1_000, setTimer: (fn, ms) => time.setTimer(fn, ms) }),
      effect,
    )(testEffectContext());
    const thrown = { reason: 'not an Error' };
    calls[0]?.reject(thrown);
    await expect(pending).rejects.toBe(thrown);
    expect(time.pendingTimers).toBe(0);
  });

  it('at the timeout, aborts the derived signal and rejects with TIMEOUT', async () => {
    const time = new ManualClock();
    const { calls, effect } = controllable();
    const pending = wrapEffect(
      timeoutMiddleware({ ms: 1_000, setTimer: (fn, ms) => time.setTimer(fn, ms) }),
      effect,
    )(testEffectContext({ stepName: 'slow', attempt: 2 }));
    const settled = pending.catch((error: unknown) => error);
    await time.advance(1_000);
    const error = (await settled) as LoomError;
    expect(isLoomError(error, MiddlewareErrorCode.TIMEOUT)).toBe(true);
    expect(error.fields).toMatchObject({ timeoutMs: 1_000, stepName: 'slow', attempt: 2 });
    expect(error.message).toContain('1000 ms');
    expect(calls[0]?.signal.aborted).toBe(true);
    expect(calls[0]?.signal.reason).toBe(error);
  });

  it('drops the late result or late rejection of an abandoned effect', async () => {
    const time = new ManualClock();
    const { calls, effect } = controllable();
    const timeout = timeoutMiddleware({ ms: 10, setTimer: (fn, ms) => time.setTimer(fn, ms) });
    const first = wrapEffect(timeout, effect)(testEffectContext()).catch((e: unknown) => e);
    const second = wrapEffect(timeout, effect)(testEffectContext()).catch((e: unknown) => e);
    await time.advance(10);
    calls[0]?.resolve('late');
    calls[1]?.reject(new Error('late failure')); // must not become an unhandled rejection
    await time.advance(0);
    expect(isLoomError(await first, MiddlewareErrorCode.TIMEOUT)).toBe(true);
    expect(isLoomError(await second, MiddlewareErrorCode.TIMEOUT)).toBe(true);
  });

  it("hands downstream a derived signal that follows the caller's abort and its reason", async () => {
    const time = new ManualClock();
    const { calls, effect } = controllable();
    const controller = new AbortController();
    const pending = wrapEffect(
      timeoutMiddleware({ ms: 1_000, setTimer: (fn, ms) => time.setTimer(fn, ms) }),
      effect,
    )(testEffectContext({ signal: controller.signal }));
    const derived = calls[0]?.signal;
    expect(derived).not.toBe(controller.signal);
    const reason = new Error('execution cancelled');
    controller.abort(reason);
    expect(derived?.aborted).toBe(true);
    expect(derived?.reason).toBe(reason);
    calls[0]?.reject(derived?.reason);
    await expect(pending).rejects.toBe(reason);
    expect(time.pendingTimers).toBe(0);
  });

  it('hands an already-aborted signal on already aborted', async () => {
    const controller = new AbortController();
    controller.abort('gone');
    const seen: AbortSignal[] = [];
    const time = new ManualClock();
    await wrapEffect(
      timeoutMiddleware({ ms: 5, setTimer: (fn, ms) => time.setTimer(fn, ms) }),
      (ctx) => {
        seen.push(ctx.signal);
        return 1;
      },
    )(testEffectContext({ signal: controller.signal }));
    expect(seen[0]?.aborted).toBe(true);
    expect(seen[0]?.reason).toBe('gone');
  });

  it("reads the caller's signal only when the effect reads its own, and at the timeout", async () => {
    const time = new ManualClock();
    const caller = new AbortController();
    let reads = 0;
    // The caller's signal a getter on the prototype, as the kernel's effect context has it.
    const { signal: _, ...fields } = testEffectContext();
    class Caller {
      readonly executionId = fields.executionId;
      readonly stepIndex = fields.stepIndex;
      readonly stepName = fields.stepName;
      readonly idempotencyKey = fields.idempotencyKey;
      readonly attempt = fields.attempt;
      get signal(): AbortSignal {
        reads++;
        return caller.signal;
      }
    }
    const ctx: AttemptContext = new Caller();
    const timeout = timeoutMiddleware({ ms: 10, setTimer: (fn, ms) => time.setTimer(fn, ms) });
    await expect(wrapEffect(timeout, () => 'quick')(ctx)).resolves.toBe('quick');
    expect(reads).toBe(0);
    let late: AttemptContext | undefined;
    const abandoned = wrapEffect(timeout, (attempt) => {
      late = attempt;
      return new Promise<string>(() => {});
    })(ctx);
    const timedOut = expect(abandoned).rejects.toMatchObject({ code: MiddlewareErrorCode.TIMEOUT });
    await time.advance(10);
    await timedOut;
    expect(reads).toBe(1);
    // The abandoned effect reads its signal after the timeout: aborted, with the TIMEOUT.
    expect(late?.signal.aborted).toBe(true);
    expect(isLoomError(late?.signal.reason, MiddlewareErrorCode.TIMEOUT)).toBe(true);
    expect(caller.signal.aborted).toBe(false);
  });

  it("hands down the caller's own fields, symbol keys too, with signal an own accessor a spread carries", async () => {
    const tag = Symbol('tag');
    const ctx = { ...testEffectContext(), note: 'kept', [tag]: 7 } as AttemptContext;
    let seen: AttemptContext | undefined;
    const timeout = timeoutMiddleware({ ms: 1_000, setTimer: () => () => {} });
    await wrapEffect(timeout, (attempt) => {
      seen = attempt;
      return 'ok';
    })(ctx);
    const down = seen as AttemptContext & Record<PropertyKey, unknown>;
    expect(down).toMatchObject({
      executionId: ctx.executionId,
      stepIndex: ctx.stepIndex,
      stepName: ctx.stepName,
      attempt: ctx.attempt,
      note: 'kept',
    });
    expect(down[tag]).toBe(7);
    // An own enumerable accessor (one class: fast properties, no hash table per call), so a
    // spread downstream carries it; it is the derived signal, not the caller's.
    const descriptor = Object.getOwnPropertyDescriptor(down, 'signal');
    expect(descriptor?.get).toBeTypeOf('function');
    expect(descriptor?.enumerable).toBe(true);
    expect(down.signal).not.toBe(ctx.signal);
    expect({ ...down }.signal).toBe(down.signal);
    expect(down.signal.aborted).toBe(false);
  });

  it('inside retry, gives each attempt its own timeout', async () => {
    const time = new ManualClock();
    const signals: AbortSignal[] = [];
    const chain = composeMiddleware(
      retryMiddleware({
        attempts: 3,
        backoff: { initialMs: 50, jitter: 'none' },
        clock: time,
      }),
      timeoutMiddleware({ ms: 1_000, setTimer: (fn, ms) => time.setTimer(fn, ms) }),
    );
    const pending = wrapEffect(chain, (ctx) => {
      signals.push(ctx.signal);
      return ctx.attempt < 3 ? new Promise<string>(() => {}) : 'third';
    })(testEffectContext());
    await time.runAll();
    await expect(pending).resolves.toBe('third');
    expect(signals.map((s) => s.aborted)).toEqual([true, true, false]);
    expect(time.delaysMs).toEqual([1_000, 50, 1_000, 100, 1_000]);
  });

  it('names each bad option', () => {
    for (const ms of [0, -5, Number.NaN, 1.5, MiddlewareLimits.timerMsMax + 1, '100', undefined]) {
      expectInvalidOption(() => timeoutMiddleware({ ms } as never), 'ms');
    }
    expectInvalidOption(() => timeoutMiddleware({ timeoutMs: 5 } as never), 'timeoutMs');
    expectInvalidOption(() => timeoutMiddleware({ ms: 5, setTimer: 1 } as never), 'setTimer');
  });
});
