import type { Attributes, Context, Exception, Span, Tracer } from '@opentelemetry/api';
import type { AttemptContext, EffectMiddleware } from '../effect-context.js';
import { errorText } from '../internal/error-text.js';
import { checkOptionsObject, requireObjectWithMethod } from '../internal/options.js';
import { loadOtelApi, type OtelApi } from './load-otel-api.js';

/** Options of {@link tracingMiddleware}. */
export interface TracingOptions {
  /** An OpenTelemetry tracer, e.g. `trace.getTracer('my-service')`. */
  tracer: Tracer;
}

/** The two halves of tracing: place `step` outside `retryMiddleware` and `attempt` inside it. */
export interface TracingMiddleware {
  /** One span per step call, `loom.step <stepName>`, child of the caller's active span. */
  readonly step: EffectMiddleware;
  /**
   * One span per attempt, `loom.attempt <stepName>`, child of the step span (or of the
   * caller's active span when no `step` half is above it). The effect runs with it active.
   */
  readonly attempt: EffectMiddleware;
}

/** Span attribute names, under `loom.` so they never clash with semantic conventions. */
export const SpanAttribute = {
  executionId: 'loom.execution_id',
  stepIndex: 'loom.step_index',
  stepName: 'loom.step_name',
  idempotencyKey: 'loom.idempotency_key',
  /** On an attempt span: 1, 2, … */
  attempt: 'loom.attempt',
  /** On a step span: how many attempt spans ran under it. */
  attempts: 'loom.attempts',
} as const;

// Carries the step span to the attempt half through the context object: middleware pass
// contexts on with `{ ...ctx }`, which copies symbol keys, so it survives retry and timeout.
const stepSpanKey = Symbol('loom.tracing.stepSpan');

interface StepSpan {
  span: Span;
  attempts: number;
}

type TracedContext = AttemptContext & { readonly [stepSpanKey]?: StepSpan };

const where = 'tracingMiddleware';

/**
 * OpenTelemetry spans around effects: a span per step and, inside it, a span per attempt.
 * Attributes name the execution, step index and name, idempotency key and attempt
 * ({@link SpanAttribute}). A failure records the exception, sets status ERROR and
 * `error.type` (the `code` of a LoomError, else the error's name); a success leaves the status
 * unset, as OpenTelemetry asks of instrumentation. Results and errors pass through unchanged.
 *
 * `@opentelemetry/api` is an optional peer dependency, loaded on the first traced call. It is
 * what links spans to their parents; without it spans are still made, as roots.
 *
 * Error codes: `INVALID_ARGUMENT` for a bad option.
 *
 * @example
 * const tracing = tracingMiddleware({ tracer: trace.getTracer('orders') });
 * const chain = composeMiddleware(tracing.step, retryMiddleware({ attempts: 3 }), tracing.attempt);
 */
export function tracingMiddleware(options: TracingOptions): TracingMiddleware {
  const o = checkOptionsObject(where, options, ['tracer']);
  const tracer = requireObjectWithMethod<Tracer>(where, 'tracer', o.tracer, 'startSpan');

  const step: EffectMiddleware = (next) => async (ctx) => {
    const api = await loadOtelApi();
    let stepSpan: StepSpan | undefined;
    return traced(api, tracer, `loom.step ${ctx.stepName}`, baseAttributes(ctx), undefined, {
      run: (span) => {
        stepSpan = { span, attempts: 0 };
        return next({ ...ctx, [stepSpanKey]: stepSpan } as TracedContext);
      },
      beforeEnd: (span) => {
        if (stepSpan !== undefined && stepSpan.attempts > 0) {
          span.setAttribute(SpanAttribute.attempts, stepSpan.attempts);
        }
      },
    });
  };

  const attempt: EffectMiddleware = (next) => async (ctx) => {
    const api = await loadOtelApi();
    const stepSpan = (ctx as TracedContext)[stepSpanKey];
    if (stepSpan !== undefined) stepSpan.attempts += 1;
    const attributes = { ...baseAttributes(ctx), [SpanAttribute.attempt]: ctx.attempt };
    return traced(api, tracer, `loom.attempt ${ctx.stepName}`, attributes, stepSpan?.span, {
      run: () => next(ctx),
    });
  };

  return { step, attempt };
}

function baseAttributes(ctx: AttemptContext): Attributes {
  return {
    [SpanAttribute.executionId]: ctx.executionId,
    [SpanAttribute.stepIndex]: ctx.stepIndex,
    [SpanAttribute.stepName]: ctx.stepName,
    [SpanAttribute.idempotencyKey]: ctx.idempotencyKey,
  };
}

interface TracedRun<T> {
  run: (span: Span) => Promise<T>;
  beforeEnd?: (span: Span) => void;
}

/** Starts a span under `parent` (or the active span), runs with it active, ends it. */
async function traced<T>(
  api: OtelApi | null,
  tracer: Tracer,
  name: string,
  attributes: Attributes,
  parent: Span | undefined,
  how: TracedRun<T>,
): Promise<T> {
  let span: Span;
  let activeContext: Context | undefined;
  if (api === null) {
    span = tracer.startSpan(name, { attributes });
  } else {
    const base = api.context.active();
    const parentContext = parent === undefined ? base : api.trace.setSpan(base, parent);
    span = tracer.startSpan(name, { attributes, kind: api.SpanKind.INTERNAL }, parentContext);
    activeContext = api.trace.setSpan(parentContext, span);
  }
  let value: T;
  try {
    value = await (api === null || activeContext === undefined
      ? how.run(span)
      : api.context.with(activeContext, how.run, undefined, span));
  } catch (error) {
    span.recordException(asException(error));
    span.setAttribute('error.type', errorType(error));
    span.setStatus({
      code: api?.SpanStatusCode.ERROR ?? spanStatusError,
      message: errorText(error),
    });
    how.beforeEnd?.(span);
    span.end();
    throw error;
  }
  how.beforeEnd?.(span);
  span.end();
  return value;
}

/** `SpanStatusCode.ERROR` of the OpenTelemetry API, for when the API is not installed. */
const spanStatusError = 2;

function asException(error: unknown): Exception {
  if (error instanceof Error || typeof error === 'string') return error;
  return { name: 'NonError', message: errorText(error) };
}

function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const { code, name } = error as { code?: unknown; name?: unknown };
    if (typeof code === 'string') return code;
    if (typeof name === 'string') return name;
  }
  return typeof error;
}
