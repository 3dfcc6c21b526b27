// Each middleware "changes nothing but what it claims": for a succeeding and a failing effect,
// the wrapped call's outcome, the number of calls and the context the effect sees equal those
// of the bare effect, except for the behaviour the middleware documents.

import { ManualClock } from '@loom/event-runtime/testing';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { circuitBreakerMiddleware } from './circuit-breaker/circuit-breaker-middleware.js';
import { composeMiddleware, wrapEffect } from './compose-middleware.js';
import type { AttemptContext, EffectMiddleware } from './effect-context.js';
import { isLoomError, type LoomError, MiddlewareErrorCode } from './errors.js';
import { loggingMiddleware } from './logging/logging-middleware.js';
import { rateLimitMiddleware } from './rate-limit/rate-limit-middleware.js';
import { retryMiddleware } from './retry/retry-middleware.js';
import { testEffectContext } from './testing/test-effect-context.js';
import { timeoutMiddleware } from './timeout/timeout-middleware.js';
import { effectTimingMiddleware } from './timing/effect-timing-middleware.js';
import { tracingMiddleware } from './tracing/tracing-middleware.js';

const tracer = new BasicTracerProvider().getTracer('conformance');

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Observed {
  outcome: Outcome;
  seen: AttemptContext[];
}

interface Case {
  name: string;
  make: (time: ManualClock) => EffectMiddleware;
  /** Documented: downstream gets its own signal (that follows the caller's). */
  derivesSignal?: boolean;
  /** Documented change to a failure; by default a failure must come out unchanged too. */
  failure?: (observed: Observed, thrown: unknown) => void;
}

const timeOf = (time: ManualClock) => ({ clock: time });

/** Retry's documented change: three attempts, then RETRIES_EXHAUSTED whose cause is the error. */
const exhaustedAfterThree = ({ outcome, seen }: Observed, thrown: unknown) => {
  expect(outcome.ok).toBe(false);
  const error = (outcome as { error: LoomError }).error;
  expect(isLoomError(error, MiddlewareErrorCode.RETRIES_EXHAUSTED)).toBe(true);
  expect(error.fields.attempts).toBe(3);
  expect(error.fields.lastError).toBe(thrown);
  expect(seen.map((c) => c.attempt)).toEqual([1, 2, 3]);
};

const cases: Case[] = [
  {
    name: 'effectTimingMiddleware',
    make: (t) => effectTimingMiddleware({ onRecord: () => {}, clock: t }),
  },
  { name: 'loggingMiddleware', make: (t) => loggingMiddleware({ log: () => {}, clock: t }) },
  {
    name: 'retryMiddleware',
    make: (t) => retryMiddleware({ attempts: 3, ...timeOf(t) }),
    failure: exhaustedAfterThree,
  },
  {
    name: 'retryMiddleware with a non-retryable error',
    make: (t) => retryMiddleware({ attempts: 3, retryable: () => false, ...timeOf(t) }),
  },
  {
    name: 'timeoutMiddleware',
    make: (t) => timeoutMiddleware({ ms: 1_000, setTimer: (fn, ms) => t.setTimer(fn, ms) }),
    derivesSignal: true,
  },
  {
    name: 'circuitBreakerMiddleware',
    make: (t) => circuitBreakerMiddleware({ failureThreshold: 2, resetAfterMs: 1_000, clock: t }),
  },
  {
    name: 'rateLimitMiddleware',
    make: (t) => rateLimitMiddleware({ tokensPerInterval: 1, intervalMs: 1_000, ...timeOf(t) }),
  },
  { name: 'tracingMiddleware (step)', make: () => tracingMiddleware({ tracer }).step },
  { name: 'tracingMiddleware (attempt)', make: () => tracingMiddleware({ tracer }).attempt },
  {
    name: 'the suggested full chain',
    make: (t) => {
      const tracing = tracingMiddleware({ tracer });
      return composeMiddleware(
        tracing.step,
        effectTimingMiddleware({ onRecord: () => {}, clock: t }),
        circuitBreakerMiddleware({ failureThreshold: 5, resetAfterMs: 1_000, clock: t }),
        rateLimitMiddleware({ tokensPerInterval: 10, intervalMs: 1_000, ...timeOf(t) }),
        retryMiddleware({ attempts: 3, ...timeOf(t) }),
        tracing.attempt,
        loggingMiddleware({ log: () => {}, clock: t }),
        timeoutMiddleware({ ms: 1_000, setTimer: (fn, ms) => t.setTimer(fn, ms) }),
      );
    },
    derivesSignal: true,
    failure: exhaustedAfterThree,
  },
];

/** Runs `effect` wrapped in `middleware` (or bare), letting time run until it settles. */
async function observe(
  middleware: EffectMiddleware | undefined,
  effect: () => unknown,
  time: ManualClock,
  ctx: AttemptContext,
): Promise<Observed> {
  const seen: AttemptContext[] = [];
  const recording = (c: AttemptContext) => {
    seen.push(c);
    return effect();
  };
  const run =
    middleware === undefined ? async () => recording(ctx) : wrapEffect(middleware, recording);
  const settled = run(ctx).then(
    (value): Outcome => ({ ok: true, value }),
    (error: unknown): Outcome => ({ ok: false, error }),
  );
  await time.runAll();
  return { outcome: await settled, seen };
}

const fieldsOf = ({
  executionId,
  stepIndex,
  stepName,
  idempotencyKey,
  attempt,
}: AttemptContext) => ({
  executionId,
  stepIndex,
  stepName,
  idempotencyKey,
  attempt,
});

const failures: [string, unknown][] = [
  ['an Error', new Error('dependency down')],
  ['a thrown string', 'plain string'],
  ['a thrown object', { code: 42 }],
  ['undefined', undefined],
];

describe.each(cases)('$name changes nothing but what it claims', (c) => {
  it('a success: the same value, one call, the same context', async () => {
    const result = { id: 'r-1' };
    const ctx = testEffectContext({ executionId: 'exec-c', stepIndex: 2, stepName: 'pay' });
    const plain = await observe(undefined, () => result, new ManualClock(), ctx);
    const time = new ManualClock();
    const wrapped = await observe(c.make(time), () => result, time, ctx);

    expect(wrapped.outcome.ok).toBe(true);
    expect((wrapped.outcome as { value: unknown }).value).toBe(
      (plain.outcome as { value: unknown }).value,
    );
    expect(wrapped.seen).toHaveLength(1);
    expect(wrapped.seen.map(fieldsOf)).toEqual(plain.seen.map(fieldsOf));
    const signal = wrapped.seen[0]?.signal;
    if (c.derivesSignal === true) {
      expect(signal).not.toBe(ctx.signal);
      expect(signal?.aborted).toBe(false);
    } else {
      expect(signal).toBe(ctx.signal);
    }
  });

  it.each(failures)('a failure with %s: the same error, unless documented', async (_, thrown) => {
    const ctx = testEffectContext();
    const fail = () => {
      throw thrown;
    };
    const plain = await observe(undefined, fail, new ManualClock(), ctx);
    const time = new ManualClock();
    const wrapped = await observe(c.make(time), fail, time, ctx);

    if (c.failure !== undefined) {
      c.failure(wrapped, thrown);
      return;
    }
    expect(wrapped.outcome.ok).toBe(false);
    expect(Object.is((wrapped.outcome as { error: unknown }).error, thrown)).toBe(true);
    expect((plain.outcome as { error: unknown }).error).toBe(thrown);
    expect(wrapped.seen.map(fieldsOf)).toEqual(plain.seen.map(fieldsOf));
  });
});
