import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { wrapEffect } from '../compose-middleware.js';
import { rateLimitMiddleware } from '../rate-limit/rate-limit-middleware.js';
import { retryMiddleware } from '../retry/retry-middleware.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { timeoutMiddleware } from '../timeout/timeout-middleware.js';

function flaky(failures: number) {
  let calls = 0;
  return () => {
    calls += 1;
    if (calls <= failures) throw new Error(`try ${calls}`);
    return 'ok';
  };
}

describe('middleware time follows the runtime clock', () => {
  it("retry without an injected timer backs off on the effect's clock (ctx.clock)", async () => {
    const clock = new ManualClock();
    const retry = retryMiddleware({ attempts: 3, backoff: { initialMs: 1_000, jitter: 'none' } });
    const startedAtMs = clock.now();
    const result = wrapEffect(retry, flaky(2))(testEffectContext({ clock }));
    expect(await clock.runUntilSettled(result)).toBe('ok');
    expect(clock.now() - startedAtMs).toBe(3_000);
  });

  it("timeout without an injected timer fires on the effect's clock", async () => {
    const clock = new ManualClock();
    const hang = wrapEffect(timeoutMiddleware({ ms: 5_000 }), () => new Promise(() => undefined));
    const startedAtMs = clock.now();
    const error = await clock
      .runUntilSettled(hang(testEffectContext({ clock })))
      .catch((caught) => caught);
    expect(error).toMatchObject({ code: 'TIMEOUT' });
    expect(clock.now() - startedAtMs).toBe(5_000);
  });

  it('an injected setTimer wins over the effect clock', async () => {
    const clock = new ManualClock();
    const time = new ManualClock();
    const retry = retryMiddleware({
      attempts: 2,
      backoff: { initialMs: 250, jitter: 'none' },
      setTimer: (fn, ms) => time.setTimer(fn, ms),
    });
    const result = wrapEffect(retry, flaky(1))(testEffectContext({ clock }));
    await time.runAll();
    expect(await result).toBe('ok');
    expect(time.delaysMs).toEqual([250]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("a kernel Clock given as a rate limiter's clock arms its timers too", async () => {
    const clock = new ManualClock();
    const limit = rateLimitMiddleware({ tokensPerInterval: 1, intervalMs: 1_000, clock });
    const call = wrapEffect(limit, () => clock.now());
    const startedAtMs = clock.now();
    expect(await call(testEffectContext())).toBe(startedAtMs);
    const second = call(testEffectContext());
    expect(clock.pendingTimers).toBe(1);
    expect(await clock.runUntilSettled(second)).toBe(startedAtMs + 1_000);
  });
});
