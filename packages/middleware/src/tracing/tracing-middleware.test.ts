import { ManualClock } from '@loom/event-runtime/testing';
import { context, type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { composeMiddleware, wrapEffect } from '../compose-middleware.js';
import { MiddlewareErrorCode } from '../errors.js';
import { expectInvalidOption } from '../internal/expect-invalid-option.test-support.js';
import { retryMiddleware } from '../retry/retry-middleware.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { SpanAttribute, tracingMiddleware } from './tracing-middleware.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('loom-middleware-test');

const spanId = (span: ReadableSpan) => span.spanContext().spanId;
const parentId = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const named = (prefix: string) =>
  exporter.getFinishedSpans().filter((span) => span.name.startsWith(prefix));

/** tracing.step → retry (3 attempts, no wait) → tracing.attempt, around `effect`. */
function tracedRetry<T>(effect: (attempt: number) => T) {
  const time = new ManualClock();
  const tracing = tracingMiddleware({ tracer });
  const chain = composeMiddleware(
    tracing.step,
    retryMiddleware({
      attempts: 3,
      backoff: { initialMs: 0 },
      clock: time,
    }),
    tracing.attempt,
  );
  const run = async (ctx = testEffectContext({ executionId: 'exec-t', stepIndex: 5 })) => {
    const pending = wrapEffect(chain, (c) => effect(c.attempt))(ctx);
    const settled = pending.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    await time.runAll();
    return settled;
  };
  return { run };
}

beforeEach(() => exporter.reset());

describe('tracingMiddleware (no context manager registered)', () => {
  it('makes one step span with one child span per attempt', async () => {
    const { run } = tracedRetry((attempt) => {
      if (attempt < 3) throw new Error(`attempt ${attempt} failed`);
      return 'charged';
    });
    expect(await run()).toEqual({ ok: true, value: 'charged' });

    const [step, ...rest] = named('loom.step');
    expect(rest).toHaveLength(0);
    expect(step?.name).toBe('loom.step charge');
    const attempts = named('loom.attempt');
    expect(attempts.map((span) => span.name)).toEqual([
      'loom.attempt charge',
      'loom.attempt charge',
      'loom.attempt charge',
    ]);
    for (const attempt of attempts) {
      expect(parentId(attempt)).toBe(spanId(step!));
      expect(attempt.spanContext().traceId).toBe(step?.spanContext().traceId);
    }
    expect(parentId(step!)).toBeUndefined();

    expect(step?.attributes).toEqual({
      [SpanAttribute.executionId]: 'exec-t',
      [SpanAttribute.stepIndex]: 5,
      [SpanAttribute.stepName]: 'charge',
      [SpanAttribute.idempotencyKey]: 'exec-t/5',
      [SpanAttribute.attempts]: 3,
    });
    expect(attempts.map((span) => span.attributes[SpanAttribute.attempt])).toEqual([1, 2, 3]);
    expect(step?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('records the exception and sets status ERROR on each failed span', async () => {
    const { run } = tracedRetry(() => {
      throw new Error('dependency down');
    });
    const outcome = await run();
    expect(outcome.ok).toBe(false);

    const attempts = named('loom.attempt');
    expect(attempts).toHaveLength(3);
    for (const attempt of attempts) {
      expect(attempt.status).toEqual({
        code: SpanStatusCode.ERROR,
        message: 'Error: dependency down',
      });
      expect(attempt.attributes['error.type']).toBe('Error');
      const exception = attempt.events.find((event) => event.name === 'exception');
      expect(exception?.attributes?.['exception.message']).toBe('dependency down');
    }
    const [step] = named('loom.step');
    expect(step?.status.code).toBe(SpanStatusCode.ERROR);
    expect(step?.attributes['error.type']).toBe(MiddlewareErrorCode.RETRIES_EXHAUSTED);
  });

  it('records a thrown non-Error, and rethrows the very value', async () => {
    const thrown = { reason: 'quota', retryInMs: 30 };
    const tracing = tracingMiddleware({ tracer });
    const wrapped = wrapEffect(composeMiddleware(tracing.step, tracing.attempt), () => {
      throw thrown;
    });
    await expect(wrapped(testEffectContext())).rejects.toBe(thrown);
    const [attempt] = named('loom.attempt');
    expect(attempt?.attributes['error.type']).toBe('object');
    const exception = attempt?.events.find((event) => event.name === 'exception');
    expect(exception?.attributes?.['exception.message']).toBe('[object Object]');
  });

  it('the attempt half alone makes root spans', async () => {
    const tracing = tracingMiddleware({ tracer });
    await wrapEffect(tracing.attempt, () => 1)(testEffectContext());
    const [attempt] = named('loom.attempt');
    expect(parentId(attempt!)).toBeUndefined();
    expect(named('loom.step')).toHaveLength(0);
  });

  it('names a bad tracer', () => {
    expectInvalidOption(() => tracingMiddleware({} as never), 'tracer');
    expectInvalidOption(() => tracingMiddleware({ tracer: {} } as never), 'tracer');
    expectInvalidOption(() => tracingMiddleware({ tracer, name: 'x' } as never), 'name');
  });
});

describe('tracingMiddleware (with an AsyncLocalStorage context manager)', () => {
  const contextManager = new AsyncLocalStorageContextManager();
  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
  });
  afterAll(() => {
    context.disable();
  });

  it("makes the step span a child of the caller's active span", async () => {
    const { run } = tracedRetry(() => 'ok');
    await tracer.startActiveSpan('caller', async (caller: Span) => {
      await run();
      caller.end();
    });
    const [caller] = named('caller');
    const [step] = named('loom.step');
    expect(parentId(step!)).toBe(spanId(caller!));
  });

  it('runs the effect with its attempt span active', async () => {
    const active: (string | undefined)[] = [];
    const { run } = tracedRetry((attempt) => {
      active.push(trace.getActiveSpan()?.spanContext().spanId);
      if (attempt < 2) throw new Error('once');
      return 'ok';
    });
    await run();
    expect(active).toEqual(named('loom.attempt').map(spanId));
  });
});
