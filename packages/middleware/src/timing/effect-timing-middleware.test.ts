import { ManualClock } from '@loom/event-runtime/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { composeMiddleware, wrapEffect } from '../compose-middleware.js';
import type { AttemptContext } from '../effect-context.js';
import { expectInvalidOption } from '../internal/expect-invalid-option.test-support.js';
import { retryMiddleware } from '../retry/retry-middleware.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { type EffectTiming, effectTimingMiddleware } from './effect-timing-middleware.js';

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

async function outcomeOf(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Same kind of outcome, and the very same value or thrown value (identity, not likeness). */
function expectIdentical(actual: Outcome, expected: Outcome) {
  expect(actual.ok).toBe(expected.ok);
  const a = actual.ok ? actual.value : actual.error;
  const e = expected.ok ? expected.value : expected.error;
  expect(Object.is(a, e)).toBe(true);
}

describe('effectTimingMiddleware', () => {
  it('records start, end, duration and outcome of a call on the injected clock', async () => {
    const time = new ManualClock(1_000);
    const timings: EffectTiming[] = [];
    const timed = effectTimingMiddleware({ onRecord: (t) => timings.push(t), clock: time });
    const wrapped = wrapEffect(timed, async () => {
      await time.advance(0); // the clock moves only when told
      return 'ok';
    });
    const pending = wrapped(testEffectContext({ stepIndex: 4, executionId: 'e' }));
    await expect(pending).resolves.toBe('ok');
    expect(timings).toEqual([
      {
        executionId: 'e',
        stepIndex: 4,
        stepName: 'charge',
        idempotencyKey: 'e/4',
        attempt: 1,
        startedAtMs: 1_000,
        endedAtMs: 1_000,
        durationMs: 0,
        outcome: 'ok',
      },
    ]);
  });

  it('measures the time the effect took, and hands over the thrown error', async () => {
    const time = new ManualClock(0);
    const timings: EffectTiming[] = [];
    const boom = new Error('boom');
    const wrapped = wrapEffect(
      effectTimingMiddleware({ onRecord: (t) => timings.push(t), clock: time }),
      async () => {
        await new Promise<void>((resolve) => time.setTimer(resolve, 250));
        throw boom;
      },
    );
    const pending = wrapped(testEffectContext());
    const settled = expect(pending).rejects.toBe(boom);
    await time.advance(250);
    await settled;
    expect(timings).toHaveLength(1);
    expect(timings[0]).toMatchObject({ startedAtMs: 0, endedAtMs: 250, durationMs: 250 });
    expect(timings[0]?.outcome).toBe('error');
    expect(timings[0]?.error).toBe(boom);
  });

  it('inside retry, records one timing per attempt', async () => {
    const time = new ManualClock();
    const timings: EffectTiming[] = [];
    let calls = 0;
    const chain = composeMiddleware(
      retryMiddleware({ attempts: 3, clock: time }),
      effectTimingMiddleware({ onRecord: (t) => timings.push(t), clock: time }),
    );
    const pending = wrapEffect(chain, () => {
      calls += 1;
      if (calls < 3) throw new Error(`fail ${calls}`);
      return 'third time';
    })(testEffectContext());
    await time.runAll();
    await expect(pending).resolves.toBe('third time');
    expect(timings.map((t) => [t.attempt, t.outcome])).toEqual([
      [1, 'error'],
      [2, 'error'],
      [3, 'ok'],
    ]);
  });

  it('gives the same result or the same thrown value as the bare effect, for any value', async () => {
    const timed = effectTimingMiddleware({ onRecord: () => {}, clock: new ManualClock() });
    await fc.assert(
      fc.asyncProperty(fc.anything(), fc.boolean(), fc.boolean(), async (value, throws, async) => {
        const effect = (_ctx: AttemptContext): unknown => {
          if (async) return throws ? Promise.reject(value) : Promise.resolve(value);
          if (throws) throw value;
          return value;
        };
        const ctx = testEffectContext();
        const plain = await outcomeOf(async () => effect(ctx));
        const wrapped = await outcomeOf(() => wrapEffect(timed, effect)(ctx));
        expectIdentical(wrapped, plain);
      }),
      { numRuns: 300 },
    );
  });

  it('a throwing onRecord changes nothing for the caller and goes to onHookError', async () => {
    const hookErrors: unknown[] = [];
    const hookFailure = new Error('observer bug');
    const timed = effectTimingMiddleware({
      onRecord: () => {
        throw hookFailure;
      },
      onHookError: (error) => hookErrors.push(error),
    });
    await expect(wrapEffect(timed, () => 7)(testEffectContext())).resolves.toBe(7);
    const boom = new Error('boom');
    await expect(
      wrapEffect(timed, () => {
        throw boom;
      })(testEffectContext()),
    ).rejects.toBe(boom);
    expect(hookErrors).toEqual([hookFailure, hookFailure]);
  });

  it('names the bad option', () => {
    expectInvalidOption(() => effectTimingMiddleware({} as never), 'onRecord');
    expectInvalidOption(() => effectTimingMiddleware({ onRecord: 'log' } as never), 'onRecord');
    expectInvalidOption(
      () => effectTimingMiddleware({ onRecord: () => {}, clock: {} } as never),
      'clock',
    );
    expectInvalidOption(
      () => effectTimingMiddleware({ onRecord: () => {}, onTiming: () => {} } as never),
      'onTiming',
    );
    expectInvalidOption(() => effectTimingMiddleware(null as never), 'options');
  });
});
