// OpenTelemetry spans of agent runs (`createAgentRuntime({ tracer })`), named and attributed by
// the GenAI semantic conventions. Spans are made only around live work: a model call, a policy's
// verdicts and a tool call are step effects, which a replay never runs again, so a resumed or
// replayed run never emits a span twice. `@opentelemetry/api` (an optional peer) links them to
// the caller's active span; without it they are roots.
import { loadOtelApi, type OtelApi } from '@loom/middleware/tracing';
import type { ModelResponse } from '@loom/reasoning';
import type { Attributes, Span, Tracer } from '@opentelemetry/api';

/** Span attribute names: the GenAI semantic conventions', and Loom's own under `loom.`. */
export const AgentSpanAttribute = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  agentName: 'gen_ai.agent.name',
  responseModel: 'gen_ai.response.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  errorType: 'error.type',
  runId: 'loom.run_id',
  turn: 'loom.turn',
  costUsd: 'loom.cost_usd',
  sideEffect: 'loom.side_effect',
  reason: 'loom.terminal_reason',
  verdicts: 'loom.policy.verdicts',
} as const;

const statusError = 2; // SpanStatusCode.ERROR, without loading the API for it

/** The spans one agent runtime makes; a no-op without a tracer. */
export class AgentSpans {
  private api: OtelApi | null | undefined;

  constructor(private readonly tracer: Tracer | undefined) {}

  /** False without a tracer: no span is made and no name or attribute is built. */
  get enabled(): boolean {
    return this.tracer !== undefined;
  }

  /**
   * Runs `work`; with a tracer, in a span (a child of the active span) named and attributed by
   * `describe` (called only then), `after` adding what the result says. A throw is recorded
   * (exception, status ERROR, `error.type`) and rethrown. Without a tracer it is `work()` itself:
   * no async frame and no promise of its own, as every record, model call and tool call pays it.
   */
  around<T>(
    work: () => Promise<T>,
    describe: () => { name: string; attributes: Attributes },
    after?: (result: T) => Attributes,
  ): Promise<T> {
    const tracer = this.tracer;
    if (tracer === undefined) {
      try {
        return work();
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.traced(tracer, work, describe, after);
  }

  private async traced<T>(
    tracer: Tracer,
    work: () => Promise<T>,
    describe: () => { name: string; attributes: Attributes },
    after?: (result: T) => Attributes,
  ): Promise<T> {
    this.api ??= await loadOtelApi();
    const api = this.api;
    const { name, attributes } = describe();
    const span: Span = tracer.startSpan(name, { attributes });
    let result: T;
    try {
      result =
        api === null
          ? await work()
          : await api.context.with(api.trace.setSpan(api.context.active(), span), work);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: statusError, message: (error as Error)?.message ?? String(error) });
      span.setAttribute(AgentSpanAttribute.errorType, errorType(error));
      span.end();
      throw error;
    }
    if (after !== undefined) span.setAttributes(after(result));
    span.end();
    return result;
  }

  /** A span that covers `startTimeMs` to now, made at once (a run's part in this process). */
  summary(name: string, startTimeMs: number, attributes: Attributes): void {
    this.tracer?.startSpan(name, { startTime: startTimeMs, attributes }).end();
  }
}

/** A model call's attributes from its recorded response. */
export function responseAttributes(response: ModelResponse): Attributes {
  const attributes: Attributes = {
    [AgentSpanAttribute.provider]: response.provider,
    [AgentSpanAttribute.responseModel]: response.model,
    [AgentSpanAttribute.finishReasons]: [response.finishReason],
  };
  if (response.usage.inputTokens !== null)
    attributes[AgentSpanAttribute.inputTokens] = response.usage.inputTokens;
  if (response.usage.outputTokens !== null)
    attributes[AgentSpanAttribute.outputTokens] = response.usage.outputTokens;
  if (response.costUsd !== null) attributes[AgentSpanAttribute.costUsd] = response.costUsd;
  return attributes;
}

function errorType(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : typeof error;
}
