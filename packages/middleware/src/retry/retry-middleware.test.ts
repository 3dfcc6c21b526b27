import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { wrapEffect } from '../compose-middleware.js';
import type { AttemptContext } from '../effect-context.js';
import { isLoomError, LoomError, MiddlewareErrorCode, terminalError } from '../errors.js';
import { expectInvalidOption } from '../internal/expect-invalid-option.test-support.js';
import { MiddlewareLimits } from '../limits.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { type RetryOptions, retryMiddleware } from './retry-middleware.js';

function setup(options: Omit<RetryOptions, 'clock' | 'setTimer'>) {
  const time = new ManualClock();
  const retry = retryMiddleware({ ...options, clock: time });
  return { time, retry };
}

/** An effect that fails `failures` times, then returns `value`; it records each context. */
function flaky<T>(failures: number, value: T, makeError = (n: number) => new Error(`fail ${n}`)) {
  const seen: AttemptContext[] = [];
  const effect = (ctx: AttemptContext) => {
    seen.push(ctx);
    if (seen.length <= failures) throw makeError(seen.length);
    return value;
  };
  return { seen, effect };
}

describe('retryMiddleware', () => {
  it('retries until success, numbering attempts and keeping the idempotency key', async () => {
    const { time, retry } = setup({ attempts: 5, backoff: { jitter: 'none' } });
    const { seen, effect } = flaky(2, 'paid');
    const pending = wrapEffect(retry, effect)(testEffectContext());
    await time.runAll();
    await expect(pending).resolves.toBe('paid');
    expect(seen.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(new Set(seen.map((c) => c.idempotencyKey))).toEqual(new Set(['exec-1/0']));
    expect(time.delaysMs).toEqual([100, 200]);
  });

  it('waits between attempts: no attempt starts before its delay is over', async () => {
    const { time, retry } = setup({ attempts: 3, backoff: { initialMs: 1_000, jitter: 'none' } });
    const { seen, effect } = flaky(1, 'ok');
    const pending = wrapEffect(retry, effect)(testEffectContext());
    await time.advance(0); // the first attempt fails and arms its backoff
    await time.advance(999);
    expect(seen).toHaveLength(1);
    await time.advance(1);
    expect(seen).toHaveLength(2);
    await expect(pending).resolves.toBe('ok');
  });

  it('hands the first attempt the very context it got, and a success unchanged', async () => {
    const { retry } = setup({ attempts: 3 });
    const result = { id: 1 };
    const { seen, effect } = flaky(0, result);
    const ctx = testEffectContext();
    await expect(wrapEffect(retry, effect)(ctx)).resolves.toBe(result);
    expect(seen[0]).toBe(ctx);
  });

  it('grows the delay by factor up to maxMs', async () => {
    const { time, retry } = setup({
      attempts: 6,
      backoff: { initialMs: 100, factor: 3, maxMs: 500, jitter: 'none' },
    });
    const pending = wrapEffect(retry, flaky(5, 'ok').effect)(testEffectContext());
    await time.runAll();
    await pending;
    expect(time.delaysMs).toEqual([100, 300, 500, 500, 500]);
  });

  it('full jitter draws each delay from [0, computed] with the injected random', async () => {
    const draws = [0, 0.5, 0.999_999];
    const { time, retry } = setup({
      attempts: 4,
      backoff: { initialMs: 100, factor: 2, jitter: 'full' },
      random: () => draws.shift() ?? 0,
    });
    const pending = wrapEffect(retry, flaky(3, 'ok').effect)(testEffectContext());
    await time.runAll();
    await pending;
    expect(time.delaysMs).toEqual([0, 100, 400]);
  });

  it('gives up after `attempts` with RETRIES_EXHAUSTED carrying attempts and the last error', async () => {
    const { time, retry } = setup({ attempts: 3 });
    const { seen, effect } = flaky(10, 'never');
    const pending = wrapEffect(retry, effect)(testEffectContext({ stepName: 'charge' }));
    const settled = pending.catch((error: unknown) => error);
    await time.runAll();
    const error = (await settled) as LoomError;
    expect(isLoomError(error, MiddlewareErrorCode.RETRIES_EXHAUSTED)).toBe(true);
    expect(error.fields).toMatchObject({ attempts: 3, executionId: 'exec-1', stepName: 'charge' });
    expect((error.fields.lastError as Error).message).toBe('fail 3');
    expect(error.cause).toBe(error.fields.lastError);
    expect(error.message).toContain("step 'charge'");
    expect(seen).toHaveLength(3);
    expect(time.pendingTimers).toBe(0);
  });

  it('keeps a thrown non-Error as the last error', async () => {
    const { time, retry } = setup({ attempts: 2 });
    const pending = wrapEffect(retry, () => {
      throw 'plain string';
    })(testEffectContext());
    const settled = pending.catch((error: unknown) => error);
    await time.runAll();
    const error = (await settled) as LoomError;
    expect(error.fields.lastError).toBe('plain string');
    expect(error.message).toContain('plain string');
  });

  it('stops at once on a terminal error (terminalError) and rethrows it unchanged', async () => {
    const { time, retry } = setup({ attempts: 5 });
    const declined = terminalError('card declined', { status: 402 });
    const { seen, effect } = flaky(5, 'never', () => declined);
    const rejected = expect(wrapEffect(retry, effect)(testEffectContext())).rejects.toBe(declined);
    await time.runAll();
    await rejected;
    expect(seen).toHaveLength(1);
    expect(time.delaysMs).toEqual([]);
  });

  it('recognises a terminal error from another copy of the package by its code', async () => {
    const { retry } = setup({ attempts: 5 });
    const foreign = Object.assign(new Error('final'), { name: 'LoomError', code: 'TERMINAL' });
    const { seen, effect } = flaky(5, 'never', () => foreign);
    await expect(wrapEffect(retry, effect)(testEffectContext())).rejects.toBe(foreign);
    expect(seen).toHaveLength(1);
  });

  it('rethrows an error `retryable` refuses, unchanged, after one call', async () => {
    const asked: unknown[] = [];
    const { retry } = setup({
      attempts: 5,
      retryable: (error) => {
        asked.push(error);
        return false;
      },
    });
    const notFound = new Error('404');
    const { seen, effect } = flaky(5, 'never', () => notFound);
    await expect(wrapEffect(retry, effect)(testEffectContext())).rejects.toBe(notFound);
    expect(seen).toHaveLength(1);
    expect(asked).toEqual([notFound]);
  });

  it('an abort during the wait rejects with the signal reason and starts no attempt', async () => {
    const { time, retry } = setup({ attempts: 5, backoff: { initialMs: 1_000, jitter: 'none' } });
    const controller = new AbortController();
    const { seen, effect } = flaky(5, 'never');
    const pending = wrapEffect(retry, effect)(testEffectContext({ signal: controller.signal }));
    const settled = pending.catch((error: unknown) => error);
    await time.advance(500);
    const reason = new LoomError(MiddlewareErrorCode.TIMEOUT, 'cancelled for the test');
    controller.abort(reason);
    await time.runAll();
    expect(await settled).toBe(reason);
    expect(seen).toHaveLength(1);
    expect(time.pendingTimers).toBe(0);
  });

  it('after a failed attempt with the signal aborted, rethrows that attempt’s error', async () => {
    const { time, retry } = setup({ attempts: 5 });
    const controller = new AbortController();
    const aborted = new Error('aborted mid-call');
    const pending = wrapEffect(retry, () => {
      controller.abort('shutdown');
      throw aborted;
    })(testEffectContext({ signal: controller.signal }));
    const rejected = expect(pending).rejects.toBe(aborted);
    await time.runAll();
    await rejected;
    expect(time.delaysMs).toEqual([]);
  });

  it('with attempts 1 makes one call, and a failure is RETRIES_EXHAUSTED', async () => {
    const { retry } = setup({ attempts: 1 });
    const { seen, effect } = flaky(1, 'never');
    const error = await wrapEffect(retry, effect)(testEffectContext()).catch((e: unknown) => e);
    expect(isLoomError(error, MiddlewareErrorCode.RETRIES_EXHAUSTED)).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it('names each bad option', () => {
    const bad: [unknown, string][] = [
      [{ attempts: 0 }, 'attempts'],
      [{ attempts: -1 }, 'attempts'],
      [{ attempts: 1.5 }, 'attempts'],
      [{ attempts: Number.NaN }, 'attempts'],
      [{ attempts: '3' }, 'attempts'],
      [{ attempts: MiddlewareLimits.retryAttemptsMax + 1 }, 'attempts'],
      [{}, 'attempts'],
      [{ attempts: 3, backoff: { initialMs: -1 } }, 'backoff.initialMs'],
      [{ attempts: 3, backoff: { initialMs: Number.NaN } }, 'backoff.initialMs'],
      [
        { attempts: 3, backoff: { initialMs: MiddlewareLimits.timerMsMax + 1 } },
        'backoff.initialMs',
      ],
      [{ attempts: 3, backoff: { factor: 0.5 } }, 'backoff.factor'],
      [{ attempts: 3, backoff: { factor: Number.POSITIVE_INFINITY } }, 'backoff.factor'],
      [{ attempts: 3, backoff: { initialMs: 500, maxMs: 100 } }, 'backoff.maxMs'],
      [{ attempts: 3, backoff: { maxMs: -5 } }, 'backoff.maxMs'],
      [{ attempts: 3, backoff: { jitter: 'half' } }, 'backoff.jitter'],
      [{ attempts: 3, backoff: { delayMs: 5 } }, 'backoff.delayMs'],
      [{ attempts: 3, backoff: 100 }, 'backoff'],
      [{ attempts: 3, retryable: true }, 'retryable'],
      [{ attempts: 3, random: 0.5 }, 'random'],
      [{ attempts: 3, setTimer: 'now' }, 'setTimer'],
      [{ attemptsMax: 3 }, 'attemptsMax'],
    ];
    for (const [options, option] of bad) {
      expectInvalidOption(() => retryMiddleware(options as RetryOptions), option);
    }
  });
});
