import { type Clock, systemClock } from '@loom/event-runtime';
import { ErrorCode, LoomError } from '../errors.js';
import { assembleResponse, type RawToolCall } from '../internal/assemble-response.js';
import { checkRequest } from '../internal/check-request.js';
import { type SetTimer, timerOf } from '../internal/time.js';
import type {
  FinishReason,
  ModelDelta,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelUsage,
} from '../model-provider.js';
import type { PriceTable } from '../price-table.js';
import type {
  AiSdkFinishReason,
  AiSdkLanguageModel,
  AiSdkStreamPart,
  AiSdkUsage,
} from './ai-sdk-model.js';
import { type CallPhase, mapAiSdkError } from './map-ai-sdk-error.js';
import { toCallOptions } from './to-call-options.js';

/** Default {@link AiSdkProviderOptions.timeoutMs}: a minute to the first token. */
export const defaultModelTimeoutMs = 60_000;

/** Options of {@link fromAiSdk}. */
export interface AiSdkProviderOptions {
  /** The provider's name in responses and routes. Default `<model.provider>:<model.modelId>`. */
  id?: string;
  /**
   * How long to wait for the answer (`generate`) or for the first delta (`stream`) before
   * `MODEL_TIMEOUT`. Default 60 000. Once a stream has started it is not timed.
   */
  timeoutMs?: number;
  /** Prices by model id, for `costUsd`. None by default: cost is then `null` (unknown). */
  prices?: PriceTable;
  /** Measures `latencyMs`. Default: the wall clock. */
  clock?: Clock;
  /** Arms the timeout. Default: the clock's timer when it has one, else `setTimeout`. */
  setTimer?: SetTimer;
  /** Extra HTTP headers on every call. */
  headers?: Record<string, string>;
  /** Passed to the model as the specification's `providerOptions` (e.g. `{ anthropic: { … } }`). */
  providerOptions?: Record<string, Record<string, unknown>>;
  /**
   * What `warm()` does. AI SDK models open their connection on the first request and have no
   * warm-up call of their own; give a function that touches the API (e.g.
   * `() => fetch(baseURL + '/models')`) so the connection pool holds an open connection before
   * the first call. Without it `warm()` does nothing.
   */
  warm?: () => Promise<unknown>;
}

/**
 * Makes any Vercel AI SDK language model (specification v3 or v4: `@ai-sdk/openai`,
 * `@ai-sdk/anthropic`, `@ai-sdk/openai-compatible`, …) a Loom {@link ModelProvider}. It calls
 * `doGenerate`/`doStream` once per call: the AI SDK's own retries live in `generateText`,
 * which is not used, so the only retry policy is Loom's ({@link withRetry}).
 *
 * Error codes (each call): `MODEL_RATE_LIMITED` (`retryAfterMs`), `MODEL_UNAVAILABLE`,
 * `MODEL_BAD_RESPONSE`, `MODEL_TIMEOUT`, `MODEL_BAD_REQUEST`; an abort of `request.signal`
 * rejects with the signal's reason. `INVALID_ARGUMENT` for a bad option or request.
 *
 * @example
 * import { createAnthropic } from '@ai-sdk/anthropic';
 * const claude = fromAiSdk(createAnthropic({ apiKey })('claude-sonnet-4-5'), { timeoutMs: 30_000 });
 * const response = await claude.generate({ messages: [{ role: 'user', content: 'Hello' }] });
 */
export function fromAiSdk(
  model: AiSdkLanguageModel,
  options: AiSdkProviderOptions = {},
): ModelProvider {
  if (model === null || typeof model !== 'object' || typeof model.doGenerate !== 'function') {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      'fromAiSdk needs an AI SDK language model (an object with doGenerate and doStream)',
      { option: 'model' },
    );
  }
  if (model.specificationVersion !== 'v3' && model.specificationVersion !== 'v4') {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `fromAiSdk supports AI SDK language models of specification v3 and v4, got '${String(model.specificationVersion)}': upgrade the provider package`,
      { option: 'model', actual: model.specificationVersion },
    );
  }
  const timeoutMs = options.timeoutMs ?? defaultModelTimeoutMs;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `timeoutMs must be a positive whole number of ms, got ${timeoutMs}`,
      { option: 'timeoutMs', actual: timeoutMs },
    );
  }
  const clock = options.clock ?? systemClock;
  const call = new AiSdkCall(model, {
    id: options.id ?? `${model.provider}:${model.modelId}`,
    timeoutMs,
    clock,
    setTimer: timerOf(clock, options.setTimer),
    prices: options.prices,
    headers: options.headers,
    providerOptions: options.providerOptions,
  });
  const warm = options.warm;
  return {
    id: call.settings.id,
    generate: (request) => call.generate(request),
    stream: (request) => call.stream(request),
    warm: async () => {
      await warm?.();
    },
  };
}

interface CallSettings {
  id: string;
  timeoutMs: number;
  clock: Clock;
  setTimer: SetTimer;
  prices: PriceTable | undefined;
  headers: Record<string, string> | undefined;
  providerOptions: Record<string, Record<string, unknown>> | undefined;
}

/** One abortable attempt: the caller's signal, plus the timeout until `stopTimer()`. */
interface Attempt {
  signal: AbortSignal;
  timedOut: () => boolean;
  stopTimer: () => void;
  dispose: () => void;
}

class AiSdkCall {
  constructor(
    private readonly model: AiSdkLanguageModel,
    readonly settings: CallSettings,
  ) {}

  async generate(request: ModelRequest): Promise<ModelResponse> {
    checkRequest(request);
    const attempt = this.attempt(request.signal);
    const startMs = this.settings.clock.now();
    try {
      const result = await this.model.doGenerate(this.callOptions(request, attempt.signal));
      let text = '';
      const calls: RawToolCall[] = [];
      for (const part of result.content) {
        if (part.type === 'text' && typeof part.text === 'string') text += part.text;
        if (part.type === 'tool-call' && part.providerExecuted !== true) {
          calls.push({
            callId: String(part.toolCallId),
            tool: String(part.toolName),
            rawInput: inputText(part.input),
          });
        }
      }
      return assembleResponse(
        {
          text,
          toolCalls: calls,
          finishReason: finishOf(result.finishReason),
          usage: usageOf(result.usage),
          model: result.response?.modelId ?? this.model.modelId,
        },
        request,
        this.answerContext(startMs),
      );
    } catch (error) {
      throw this.failure(error, 'request', attempt, request.signal);
    } finally {
      attempt.dispose();
    }
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelDelta> {
    checkRequest(request);
    const attempt = this.attempt(request.signal);
    const startMs = this.settings.clock.now();
    let phase: CallPhase = 'request';
    let reader: ReadableStreamDefaultReader<AiSdkStreamPart> | undefined;
    try {
      const { stream } = await this.model.doStream(this.callOptions(request, attempt.signal));
      phase = 'body';
      reader = stream.getReader();
      const state = new StreamState();
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        const deltas = state.take(next.value);
        if (next.value.type === 'error') throw next.value.error;
        if (deltas.length > 0) attempt.stopTimer();
        yield* deltas;
        if (state.finished) break;
      }
      if (!state.finished) {
        throw new LoomError(
          ErrorCode.MODEL_BAD_RESPONSE,
          `the stream of ${this.settings.id} ended without its finish: the response was cut off`,
          { provider: this.settings.id, model: this.model.modelId },
        );
      }
      yield {
        type: 'finish',
        response: assembleResponse(
          state.answer(this.model.modelId),
          request,
          this.answerContext(startMs),
        ),
      };
    } catch (error) {
      throw this.failure(error, phase, attempt, request.signal);
    } finally {
      attempt.dispose();
      // A consumer that stops early, or a failure, must not leave the HTTP body open.
      reader?.cancel().catch(() => {});
    }
  }

  private callOptions(request: ModelRequest, signal: AbortSignal) {
    const { headers, providerOptions } = this.settings;
    return {
      ...toCallOptions(request),
      abortSignal: signal,
      ...(headers !== undefined ? { headers } : {}),
      ...(providerOptions !== undefined ? { providerOptions } : {}),
    };
  }

  private answerContext(startMs: number) {
    return {
      provider: this.settings.id,
      latencyMs: Math.max(0, this.settings.clock.now() - startMs),
      prices: this.settings.prices,
    };
  }

  private attempt(callerSignal: AbortSignal | undefined): Attempt {
    const controller = new AbortController();
    let timedOut = false;
    const onCallerAbort = () => controller.abort(callerSignal?.reason);
    if (callerSignal?.aborted) onCallerAbort();
    else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    const cancelTimer = this.settings.setTimer(() => {
      timedOut = true;
      controller.abort();
    }, this.settings.timeoutMs);
    return {
      signal: controller.signal,
      timedOut: () => timedOut,
      stopTimer: cancelTimer,
      dispose: () => {
        cancelTimer();
        callerSignal?.removeEventListener('abort', onCallerAbort);
      },
    };
  }

  private failure(
    error: unknown,
    phase: CallPhase,
    attempt: Attempt,
    callerSignal: AbortSignal | undefined,
  ): unknown {
    if (callerSignal?.aborted) return callerSignal.reason;
    const facts = { provider: this.settings.id, model: this.model.modelId };
    if (attempt.timedOut()) {
      return new LoomError(
        ErrorCode.MODEL_TIMEOUT,
        `${this.settings.id} sent no answer within ${this.settings.timeoutMs} ms; raise timeoutMs or use another route`,
        { ...facts, timeoutMs: this.settings.timeoutMs },
        error,
      );
    }
    return mapAiSdkError(error, phase, { ...facts, nowMs: this.settings.clock.now() });
  }
}

/** Accumulates stream parts into deltas and the final raw answer. */
class StreamState {
  text = '';
  finished = false;
  private finishReason: FinishReason = 'other';
  private usage: ModelUsage = { inputTokens: null, outputTokens: null, cachedInputTokens: null };
  private modelId: string | undefined;
  private readonly started = new Map<string, string>();
  private readonly calls: RawToolCall[] = [];

  take(part: AiSdkStreamPart): ModelDelta[] {
    switch (part.type) {
      case 'text-delta':
        if (typeof part.delta !== 'string' || part.delta === '') return [];
        this.text += part.delta;
        return [{ type: 'text', text: part.delta }];
      case 'tool-input-start':
        if (part.providerExecuted === true) return [];
        this.started.set(String(part.id), String(part.toolName));
        return [{ type: 'tool_call_start', callId: String(part.id), tool: String(part.toolName) }];
      case 'tool-input-delta':
        if (!this.started.has(String(part.id)) || typeof part.delta !== 'string') return [];
        return [{ type: 'tool_call_input', callId: String(part.id), inputText: part.delta }];
      case 'tool-call':
        return this.toolCall(part);
      case 'response-metadata':
        if (typeof part.modelId === 'string') this.modelId = part.modelId;
        return [];
      case 'finish':
        this.finished = true;
        if (part.finishReason !== undefined) this.finishReason = finishOf(part.finishReason);
        if (part.usage !== undefined) this.usage = usageOf(part.usage);
        return [];
      default:
        return [];
    }
  }

  answer(fallbackModel: string) {
    return {
      text: this.text,
      toolCalls: this.calls,
      finishReason: this.finishReason,
      usage: this.usage,
      model: this.modelId ?? fallbackModel,
    };
  }

  private toolCall(part: AiSdkStreamPart): ModelDelta[] {
    if (part.providerExecuted === true) return [];
    const call = {
      callId: String(part.toolCallId),
      tool: String(part.toolName),
      rawInput: inputText(part.input),
    };
    this.calls.push(call);
    if (this.started.has(call.callId)) return [];
    // A provider that sends the call whole: announce it as deltas too, so a consumer that
    // follows the deltas alone sees every call.
    return [
      { type: 'tool_call_start', callId: call.callId, tool: call.tool },
      { type: 'tool_call_input', callId: call.callId, inputText: call.rawInput },
    ];
  }
}

function inputText(input: unknown): string {
  if (typeof input === 'string') return input;
  return input === undefined ? '' : JSON.stringify(input);
}

const finishReasons: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  'tool-calls': 'tool_calls',
  'content-filter': 'content_filter',
  error: 'error',
  interrupted: 'interrupted',
};

function finishOf(reason: AiSdkFinishReason | string): FinishReason {
  const unified = typeof reason === 'string' ? reason : reason.unified;
  return Object.hasOwn(finishReasons, unified) ? (finishReasons[unified] as FinishReason) : 'other';
}

function count(value: number | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function usageOf(usage: AiSdkUsage): ModelUsage {
  return {
    inputTokens: count(usage.inputTokens?.total),
    outputTokens: count(usage.outputTokens?.total),
    cachedInputTokens: count(usage.inputTokens?.cacheRead),
  };
}
