import { type Clock, systemClock } from '@loom/event-runtime';
import { LoomError, ReasoningErrorCode } from '../errors.js';
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

/** Default {@link AiSdkProviderOptions.timeoutMs}: a minute to the first part of a stream. */
export const defaultModelTimeoutMs = 60_000;

/** Default {@link AiSdkProviderOptions.idleTimeoutMs}: a minute of silence inside a stream. */
export const defaultModelIdleTimeoutMs = 60_000;

/** Default {@link AiSdkProviderOptions.generateTimeoutMs}: ten minutes for a whole answer. */
export const defaultModelGenerateTimeoutMs = 600_000;

/** Options of {@link fromAiSdk}. */
export interface AiSdkProviderOptions {
  /** The provider's name in responses and routes. Default `<model.provider>:<model.modelId>`. */
  id?: string;
  /**
   * How long `stream` waits for the model's first stream part (reasoning, text, a tool call,
   * metadata: anything after the connection opened) before `MODEL_TIMEOUT`. Default 60 000.
   */
  timeoutMs?: number;
  /**
   * How long a started stream may stay silent between two parts before `MODEL_TIMEOUT`; re-armed
   * on every part, so a long answer that keeps streaming is never cut. Default 60 000.
   */
  idleTimeoutMs?: number;
  /**
   * How long `generate` waits for the whole answer before `MODEL_TIMEOUT`. A non-streamed answer
   * arrives in one piece, so this bounds generation, not the first byte: it is much larger than
   * `timeoutMs`. Default 600 000 (ten minutes).
   */
  generateTimeoutMs?: number;
  /** Prices by model id, for `costUsd`. None by default: cost is then `null` (unknown). */
  prices?: PriceTable;
  /** Measures `latencyMs`. Default: the wall clock. */
  clock?: Pick<Clock, 'now'>;
  /** Arms the timeout. Default: the clock's timer when it has one, else `setTimeout`. */
  setTimer?: SetTimer;
  /** Extra HTTP headers on every call. */
  headers?: Record<string, string>;
  /** Passed to the model as the specification's `providerOptions` (e.g. `{ anthropic: { … } }`). */
  providerOptions?: Record<string, Record<string, unknown>>;
  /**
   * What `warm()` does. AI SDK models open their connection on the first request and have no
   * warm-up call of their own; give a function that touches the API and reads the body (e.g.
   * `async () => { await (await fetch(baseURL + '/models')).arrayBuffer(); }`: an unread body
   * ties up the socket) so the connection pool holds an open connection before the first call.
   * Without it `warm()` does nothing.
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
 * `MODEL_BAD_RESPONSE` (also a cut-off answer: finish reason `'interrupted'`), `MODEL_TIMEOUT`
 * (`timeoutMs`, `idleTimeoutMs`, `generateTimeoutMs`), `MODEL_BAD_REQUEST`; an abort of `request.signal`
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
      ReasoningErrorCode.INVALID_ARGUMENT,
      'fromAiSdk needs an AI SDK language model (an object with doGenerate and doStream)',
      { option: 'model' },
    );
  }
  if (model.specificationVersion !== 'v3' && model.specificationVersion !== 'v4') {
    throw new LoomError(
      ReasoningErrorCode.INVALID_ARGUMENT,
      `fromAiSdk supports AI SDK language models of specification v3 and v4, got '${String(model.specificationVersion)}': upgrade the provider package`,
      { option: 'model', actual: model.specificationVersion },
    );
  }
  const timeoutMs = positiveMs('timeoutMs', options.timeoutMs, defaultModelTimeoutMs);
  const idleTimeoutMs = positiveMs(
    'idleTimeoutMs',
    options.idleTimeoutMs,
    defaultModelIdleTimeoutMs,
  );
  const generateTimeoutMs = positiveMs(
    'generateTimeoutMs',
    options.generateTimeoutMs,
    defaultModelGenerateTimeoutMs,
  );
  const clock = options.clock ?? systemClock;
  const call = new AiSdkCall(model, {
    id: options.id ?? `${model.provider}:${model.modelId}`,
    timeoutMs,
    idleTimeoutMs,
    generateTimeoutMs,
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

function positiveMs(option: string, value: number | undefined, fallback: number): number {
  const ms = value ?? fallback;
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new LoomError(
      ReasoningErrorCode.INVALID_ARGUMENT,
      `${option} must be a positive whole number of ms, got ${ms}`,
      { option, actual: ms },
    );
  }
  return ms;
}

interface CallSettings {
  id: string;
  timeoutMs: number;
  idleTimeoutMs: number;
  generateTimeoutMs: number;
  clock: Pick<Clock, 'now'>;
  setTimer: SetTimer;
  prices: PriceTable | undefined;
  headers: Record<string, string> | undefined;
  providerOptions: Record<string, Record<string, unknown>> | undefined;
}

/** Which timer aborted an attempt, as the option that set it and its value. */
interface Timeout {
  option: 'timeoutMs' | 'idleTimeoutMs' | 'generateTimeoutMs';
  ms: number;
}

/** One abortable attempt: the caller's signal, plus one timeout that `arm()` replaces. */
interface Attempt {
  signal: AbortSignal;
  /** Rejects with the abort reason once the attempt aborts (never resolves). */
  aborted: Promise<never>;
  timedOut: () => Timeout | undefined;
  arm: (timeout: Timeout) => void;
  dispose: () => void;
}

class AiSdkCall {
  constructor(
    private readonly model: AiSdkLanguageModel,
    readonly settings: CallSettings,
  ) {}

  async generate(request: ModelRequest): Promise<ModelResponse> {
    checkRequest(request);
    const attempt = this.attempt(request.signal, {
      option: 'generateTimeoutMs',
      ms: this.settings.generateTimeoutMs,
    });
    const startMs = this.settings.clock.now();
    try {
      const result = await Promise.race([
        this.model.doGenerate(this.callOptions(request, attempt.signal)),
        attempt.aborted,
      ]);
      this.refuseInterrupted(result.finishReason);
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
    const { timeoutMs, idleTimeoutMs } = this.settings;
    const attempt = this.attempt(request.signal, { option: 'timeoutMs', ms: timeoutMs });
    const startMs = this.settings.clock.now();
    let phase: CallPhase = 'request';
    let reader: ReadableStreamDefaultReader<AiSdkStreamPart> | undefined;
    try {
      const { stream } = await Promise.race([
        this.model.doStream(this.callOptions(request, attempt.signal)),
        attempt.aborted,
      ]);
      phase = 'body';
      reader = stream.getReader();
      const state = new StreamState();
      for (;;) {
        // The race: a stalled body must fail on the timer even if the package ignores the abort.
        const next = await Promise.race([reader.read(), attempt.aborted]);
        if (next.done) break;
        // Any part after stream-start (reasoning, metadata, text) proves the model is answering:
        // from here only silence is timed, so a long reasoning phase is not a timeout.
        if (next.value.type !== 'stream-start') {
          attempt.arm({ option: 'idleTimeoutMs', ms: idleTimeoutMs });
        }
        const deltas = state.take(next.value);
        if (next.value.type === 'error') throw next.value.error;
        if (next.value.type === 'finish') this.refuseInterrupted(next.value.finishReason);
        yield* deltas;
        if (state.finished) break;
      }
      if (!state.finished) {
        throw new LoomError(
          ReasoningErrorCode.MODEL_BAD_RESPONSE,
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

  /**
   * The AI SDK reports a stream that ended without the provider's completion signal (no
   * message_stop, no finish_reason) as a finish with reason 'interrupted': the answer is cut off
   * and must not be recorded as one.
   */
  private refuseInterrupted(reason: AiSdkFinishReason | string | undefined): void {
    if (reason === undefined || finishOf(reason) !== 'interrupted') return;
    throw new LoomError(
      ReasoningErrorCode.MODEL_BAD_RESPONSE,
      `the stream was cut off: ${this.settings.id} ended its response without a completion signal, so the answer may be incomplete`,
      { provider: this.settings.id, model: this.model.modelId, finishReason: 'interrupted' },
    );
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

  private attempt(callerSignal: AbortSignal | undefined, first: Timeout): Attempt {
    const controller = new AbortController();
    let timedOut: Timeout | undefined;
    let cancelTimer = () => {};
    const aborted = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), {
        once: true,
      });
    });
    aborted.catch(() => {}); // raced, never awaited alone
    const onCallerAbort = () => controller.abort(callerSignal?.reason);
    const arm = (timeout: Timeout) => {
      cancelTimer();
      if (controller.signal.aborted) return;
      cancelTimer = this.settings.setTimer(() => {
        timedOut = timeout;
        controller.abort();
      }, timeout.ms);
    };
    if (callerSignal?.aborted) onCallerAbort();
    else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    arm(first);
    return {
      signal: controller.signal,
      aborted,
      timedOut: () => timedOut,
      arm,
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
    const timeout = attempt.timedOut();
    if (timeout !== undefined) {
      const what = {
        timeoutMs: `sent nothing within ${timeout.ms} ms`,
        idleTimeoutMs: `went silent mid-stream for ${timeout.ms} ms`,
        generateTimeoutMs: `sent no answer within ${timeout.ms} ms`,
      }[timeout.option];
      return new LoomError(
        ReasoningErrorCode.MODEL_TIMEOUT,
        `${this.settings.id} ${what}; raise ${timeout.option} or use another route`,
        { ...facts, timeoutMs: timeout.ms, option: timeout.option },
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
