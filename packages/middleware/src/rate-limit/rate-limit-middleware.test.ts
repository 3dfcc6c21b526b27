import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { wrapEffect } from '../compose-middleware.js';
import { isLoomError, type LoomError, MiddlewareErrorCode } from '../errors.js';
import { expectInvalidOption } from '../internal/expect-invalid-option.test-support.js';
import { MiddlewareLimits } from '../limits.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { type RateLimitOptions, rateLimitMiddleware } from './rate-limit-middleware.js';

function setup(options: Partial<RateLimitOptions> = {}) {
  const time = new ManualClock(0);
  const limiter = rateLimitMiddleware({
    tokensPerInterval: 2,
    intervalMs: 1_000,
    clock: time,
    ...options,
  });
  const started: { name: string; atMs: number }[] = [];
  /** Calls through the limiter; resolves to the name, or to the rejection. */
  const call = (name: string, signal?: AbortSignal) =>
    wrapEffect(limiter, () => {
      started.push({ name, atMs: time.now() });
      return name;
    })(testEffectContext(signal === undefined ? {} : { signal })).catch((error: unknown) => error);
  return { time, call, started };
}

describe('rateLimitMiddleware', () => {
  it('lets a burst through at once, then one call per token as the bucket refills', async () => {
    const { time, call, started } = setup({ burst: 2 });
    const calls = ['a', 'b', 'c', 'd'].map((name) => call(name));
    await time.advance(0);
    expect(started.map((s) => s.name)).toEqual(['a', 'b']);
    await time.runAll();
    expect(await Promise.all(calls)).toEqual(['a', 'b', 'c', 'd']);
    expect(started).toEqual([
      { name: 'a', atMs: 0 },
      { name: 'b', atMs: 0 },
      { name: 'c', atMs: 500 },
      { name: 'd', atMs: 1_000 },
    ]);
  });

  it('never holds more than burst tokens, however long it was idle', async () => {
    const { time, call, started } = setup({ burst: 2 });
    await time.advance(60_000);
    const calls = ['a', 'b', 'c'].map((name) => call(name));
    await time.advance(0);
    expect(started.map((s) => s.name)).toEqual(['a', 'b']);
    await time.runAll();
    await Promise.all(calls);
    expect(started[2]?.atMs).toBe(60_500);
  });

  it("with onLimit 'reject', rejects with RATE_LIMITED and when to come back", async () => {
    const { call, started } = setup({ burst: 1, onLimit: 'reject' });
    expect(await call('a')).toBe('a');
    const error = (await call('b')) as LoomError;
    expect(isLoomError(error, MiddlewareErrorCode.RATE_LIMITED)).toBe(true);
    expect(error.fields).toMatchObject({ reason: 'no_token', retryAfterMs: 500 });
    expect(started).toHaveLength(1);
  });

  it('an abort takes a waiting call out of line with the signal reason', async () => {
    const { time, call, started } = setup({ burst: 1 });
    const controller = new AbortController();
    const first = call('a');
    const waiting = call('b', controller.signal);
    const third = call('c');
    await time.advance(100);
    controller.abort('caller gave up');
    expect(await waiting).toBe('caller gave up');
    await time.runAll();
    expect(await first).toBe('a');
    expect(await third).toBe('c');
    expect(started).toEqual([
      { name: 'a', atMs: 0 },
      { name: 'c', atMs: 500 },
    ]);
  });

  it('the last waiter leaving cancels the refill timer', async () => {
    const { time, call } = setup({ burst: 1 });
    const controller = new AbortController();
    await call('a');
    const waiting = call('b', controller.signal);
    expect(time.pendingTimers).toBe(1);
    controller.abort('gone');
    await waiting;
    expect(time.pendingTimers).toBe(0);
  });

  it('an already-aborted call that must wait is rejected without queueing', async () => {
    const { call } = setup({ burst: 1 });
    await call('a');
    const controller = new AbortController();
    controller.abort('already gone');
    expect(await call('b', controller.signal)).toBe('already gone');
  });

  it('rejects with RATE_LIMITED once queueMax calls are waiting', async () => {
    const { time, call } = setup({ burst: 1, queueMax: 1 });
    const calls = [call('a'), call('b'), call('c')];
    const third = (await calls[2]) as LoomError;
    expect(third.code).toBe(MiddlewareErrorCode.RATE_LIMITED);
    expect(third.fields.reason).toBe('queue_full');
    await time.runAll();
    expect(await calls[1]).toBe('b');
  });

  it('refills fractional rates exactly: half a token per interval is one call per two', async () => {
    const { time, call, started } = setup({ tokensPerInterval: 0.5, intervalMs: 1_000 });
    const calls = ['a', 'b', 'c'].map((name) => call(name));
    await time.runAll();
    await Promise.all(calls);
    expect(started.map((s) => s.atMs)).toEqual([0, 2_000, 4_000]);
  });

  it('names each bad option', () => {
    const base = { tokensPerInterval: 5, intervalMs: 1_000 };
    const bad: [unknown, string][] = [
      [{ ...base, tokensPerInterval: 0 }, 'tokensPerInterval'],
      [{ ...base, tokensPerInterval: -1 }, 'tokensPerInterval'],
      [{ ...base, tokensPerInterval: Number.NaN }, 'tokensPerInterval'],
      [{ intervalMs: 1_000 }, 'tokensPerInterval'],
      [{ ...base, intervalMs: 0 }, 'intervalMs'],
      [{ ...base, intervalMs: -1_000 }, 'intervalMs'],
      [{ ...base, intervalMs: MiddlewareLimits.timerMsMax + 1 }, 'intervalMs'],
      [{ ...base, burst: 0 }, 'burst'],
      [{ ...base, burst: 1.5 }, 'burst'],
      [{ ...base, onLimit: 'drop' }, 'onLimit'],
      [{ ...base, queueMax: -1 }, 'queueMax'],
      [{ ...base, queueMax: MiddlewareLimits.rateLimitQueueMax + 1 }, 'queueMax'],
      [{ ...base, ratePerSecond: 5 }, 'ratePerSecond'],
    ];
    for (const [options, option] of bad) {
      expectInvalidOption(() => rateLimitMiddleware(options as never), option);
    }
  });
});
