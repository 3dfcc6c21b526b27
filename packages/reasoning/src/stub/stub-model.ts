import { type Clock, systemClock } from '@loom/event-runtime';
import { LoomError, ReasoningErrorCode } from '../errors.js';
import { assembleResponse, type RawToolCall } from '../internal/assemble-response.js';
import { checkRequest } from '../internal/check-request.js';
import { type SetTimer, sleep, timerOf } from '../internal/time.js';
import type {
  FinishReason,
  ModelDelta,
  ModelProvider,
  ModelRequest,
  ModelResponse,
} from '../model-provider.js';
import type { JsonValue } from '../model-types.js';
import type { PriceTable } from '../price-table.js';

/** A failure a stub turn can play, as a real provider would throw it. */
export interface StubFailure {
  code:
    | 'MODEL_RATE_LIMITED'
    | 'MODEL_UNAVAILABLE'
    | 'MODEL_TIMEOUT'
    | 'MODEL_BAD_RESPONSE'
    | 'MODEL_BAD_REQUEST';
  retryAfterMs?: number;
  /** Streaming only: fail after this many deltas instead of before the first. */
  afterDeltas?: number;
}

/** A tool call a stub turn makes: a JSON input, or raw argument text (to play bad output). */
export type StubToolCall =
  | { tool: string; input: JsonValue; callId?: string }
  | { tool: string; rawInput: string; callId?: string };

/** One scripted answer. */
export interface StubTurn {
  text?: string;
  toolCalls?: readonly StubToolCall[];
  /** Default: `tool_calls` when the turn calls a tool, else `stop`. */
  finishReason?: FinishReason;
  /** Overrides the model's `latencyMs` for this turn. */
  latencyMs?: number;
  /** Throw this instead of answering (after the latency). */
  fail?: StubFailure;
}

/** What a scripted stub answers: turns in order, or a function of the request and call index. */
export type StubScript =
  | readonly StubTurn[]
  | ((request: ModelRequest, callIndex: number) => StubTurn | Promise<StubTurn>);

/** Options of {@link StubModel}. */
export interface StubModelOptions {
  script: StubScript;
  /** Provider id in responses. Default `'stub'`. */
  id?: string;
  /** Model id in responses (and the key for `prices`). Default `'stub-model'`. */
  model?: string;
  /** Simulated latency of each call, waited on `setTimer`. Default 0. */
  latencyMs?: number;
  /** Measures `latencyMs`. Default: the wall clock. */
  clock?: Pick<Clock, 'now'>;
  /** Waits the latency. Default: the clock's timer when it arms timers, else `setTimeout`. */
  setTimer?: SetTimer;
  prices?: PriceTable;
}

/** How many of the latest requests a {@link StubModel} keeps in `requests`: 1 000. */
export const stubRequestsKept = 1_000;

/** A stub's deterministic token count: a quarter of the characters, rounded up. */
export function stubTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * A scripted model for tests, demos and benchmarks: no network, deterministic answers, call ids
 * and token usage, and latency simulated on an injected clock and timer. Its responses go through
 * the same checks as a real provider's, so a script can play bad output (unknown tools, arguments
 * that are not JSON, empty answers) and failures (`fail`).
 *
 * Error codes: the `fail` code a turn scripts; `STUB_SCRIPT_EXHAUSTED` when a list script has no
 * turn left; `INVALID_ARGUMENT` for a bad request.
 *
 * @example
 * const model = new StubModel({
 *   script: [{ toolCalls: [{ tool: 'search', input: { q: 'loom' } }] }, { text: 'Done.' }],
 *   latencyMs: 50,
 * });
 */
export class StubModel implements ModelProvider {
  readonly id: string;
  /** Calls made so far (`generate` and `stream` alike). */
  calls = 0;
  /** `warm()` calls so far. */
  warms = 0;
  /**
   * The requests received, without their signal, oldest first: the last {@link stubRequestsKept}
   * (1 000), so a stub in a long benchmark does not grow without limit. `calls` counts them all.
   */
  readonly requests: Omit<ModelRequest, 'signal'>[] = [];
  private readonly model: string;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly setTimer: SetTimer;

  constructor(private readonly options: StubModelOptions) {
    const latency = options.latencyMs ?? 0;
    if (!Number.isSafeInteger(latency) || latency < 0) {
      throw new LoomError(
        ReasoningErrorCode.INVALID_ARGUMENT,
        `latencyMs must be a whole number ≥ 0, got ${latency}`,
        { option: 'latencyMs', actual: latency },
      );
    }
    this.id = options.id ?? 'stub';
    this.model = options.model ?? 'stub-model';
    this.clock = options.clock ?? systemClock;
    this.setTimer = timerOf(this.clock, options.setTimer);
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const { turn, startMs, callIndex } = await this.begin(request);
    if (turn.fail !== undefined) throw this.failure(turn.fail);
    return this.respond(turn, request, startMs, callIndex);
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelDelta> {
    const { turn, startMs, callIndex } = await this.begin(request);
    const response = this.respond(turn, request, startMs, callIndex);
    const deltas: ModelDelta[] = [
      ...(turn.text?.match(/\s*\S+\s*|\s+/g) ?? []).map((text) => ({
        type: 'text' as const,
        text,
      })),
      ...this.rawCalls(turn, callIndex).flatMap((call): ModelDelta[] => [
        { type: 'tool_call_start', callId: call.callId, tool: call.tool },
        { type: 'tool_call_input', callId: call.callId, inputText: call.rawInput },
      ]),
    ];
    for (const [index, delta] of deltas.entries()) {
      if (turn.fail !== undefined && (turn.fail.afterDeltas ?? 0) === index) {
        throw this.failure(turn.fail);
      }
      yield delta;
    }
    if (turn.fail !== undefined) throw this.failure(turn.fail);
    yield { type: 'finish', response };
  }

  async warm(): Promise<void> {
    this.warms++;
  }

  private async begin(request: ModelRequest) {
    checkRequest(request);
    const callIndex = this.calls++;
    const { signal, ...journaled } = request;
    this.requests.push(journaled);
    if (this.requests.length > stubRequestsKept) this.requests.shift();
    const startMs = this.clock.now();
    // A script's turn is awaited only when the script answers with a promise: a list script and
    // a synchronous function cost no extra promise and turn of the event loop per call.
    const next = this.turnFor(request, callIndex);
    const turn =
      typeof (next as Partial<PromiseLike<StubTurn>>).then === 'function'
        ? await next
        : (next as StubTurn);
    const latencyMs = turn.latencyMs ?? this.options.latencyMs ?? 0;
    if (latencyMs > 0) await sleep(latencyMs, this.setTimer, signal);
    else if (signal?.aborted) throw signal.reason;
    return { turn, startMs, callIndex };
  }

  private turnFor(request: ModelRequest, callIndex: number): StubTurn | Promise<StubTurn> {
    const { script } = this.options;
    if (typeof script === 'function') return script(request, callIndex);
    const turn = script[callIndex];
    if (turn === undefined) {
      throw new LoomError(
        ReasoningErrorCode.STUB_SCRIPT_EXHAUSTED,
        `stub '${this.id}' was called ${callIndex + 1} times but its script has ${script.length} turns: add turns or use a function script`,
        { provider: this.id, calls: callIndex + 1 },
      );
    }
    return turn;
  }

  private rawCalls(turn: StubTurn, callIndex: number): RawToolCall[] {
    return (turn.toolCalls ?? []).map((call, index) => ({
      callId: call.callId ?? `stub-${callIndex}-${index}`,
      tool: call.tool,
      rawInput: 'rawInput' in call ? call.rawInput : JSON.stringify(call.input),
    }));
  }

  private respond(
    turn: StubTurn,
    request: ModelRequest,
    startMs: number,
    callIndex: number,
  ): ModelResponse {
    const calls = this.rawCalls(turn, callIndex);
    const text = turn.text ?? '';
    const prompt = JSON.stringify([request.messages, request.tools ?? []]);
    return assembleResponse(
      {
        text,
        toolCalls: calls,
        finishReason: turn.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
        usage: {
          inputTokens: stubTokens(prompt),
          outputTokens: stubTokens(text + calls.map((call) => call.tool + call.rawInput).join('')),
          cachedInputTokens: 0,
        },
        model: this.model,
      },
      request,
      {
        provider: this.id,
        latencyMs: Math.max(0, this.clock.now() - startMs),
        prices: this.options.prices,
      },
    );
  }

  private failure(fail: StubFailure): LoomError {
    return new LoomError(fail.code, `stub '${this.id}' plays ${fail.code}`, {
      provider: this.id,
      model: this.model,
      ...(fail.retryAfterMs !== undefined ? { retryAfterMs: fail.retryAfterMs } : {}),
    });
  }
}

/**
 * A timer that jumps a test clock forward instead of waiting, then fires: simulated latency costs
 * no wall time and `latencyMs` reads exactly what was simulated. For a `ManualClock`.
 *
 * @example
 * const clock = new ManualClock();
 * const model = new StubModel({ script, latencyMs: 50, clock, setTimer: advancingTimer(clock) });
 */
export function advancingTimer(clock: { advance(ms: number): void | Promise<void> }): SetTimer {
  return (fn, ms) => {
    let cancelled = false;
    // A ManualClock's advance settles once the timers it fired have: fire after it.
    void Promise.resolve(clock.advance(ms)).then(() => {
      if (!cancelled) fn();
    });
    return () => {
      cancelled = true;
    };
  };
}
