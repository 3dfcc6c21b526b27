import type { JsonValue } from '@loom/event-runtime';
import type { ModelResponse, ToolCall } from '@loom/reasoning';
import type { HistoryStep, Observation } from '@loom/render';
import type { ModelCallUsage, RunResult, TerminalReason, UsageTotals } from '../run-result.js';
import type { RunView, TurnView } from '../run-view.js';
import { deepFreeze } from './deep-freeze.js';
import { canonicalJson } from './request-hash.js';

/**
 * What the agent flow returns (the run's output in the log): a RunResult without its id and its
 * per-call usage, which is read from the log's `decide:<t>` records instead (so the recorded
 * output stays the same size however long the run).
 */
export type RunOutput = Omit<RunResult, 'runId' | 'calls'>;

/** Usage of no model call at all. */
export function noUsage(): UsageTotals {
  return {
    modelCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    costUsd: 0,
    costUnknownCalls: 0,
    latencyMs: 0,
    fallbacks: 0,
  };
}

/** The sums of `calls`. */
export function usageOf(calls: readonly ModelCallUsage[]): UsageTotals {
  const u = noUsage();
  for (const call of calls) addCall(u, call);
  return u;
}

function addCall(u: UsageTotals, call: ModelCallUsage): void {
  u.modelCalls += 1;
  u.inputTokens += call.inputTokens ?? 0;
  u.outputTokens += call.outputTokens ?? 0;
  u.cachedInputTokens += call.cachedInputTokens ?? 0;
  if (call.costUsd === null) u.costUnknownCalls += 1;
  else u.costUsd += call.costUsd;
  u.latencyMs += call.latencyMs;
  u.fallbacks += call.fallbacks.length;
}

/**
 * The result of a run cancelled by an operator (the kernel records no agent output for it): its
 * turns and usage are those of the model calls in its log.
 */
export function cancelledResult(
  runId: string,
  error: string,
  calls: readonly ModelCallUsage[],
): RunResult {
  return {
    runId,
    reason: 'operator_cancelled',
    error,
    turns: calls.length,
    usage: usageOf(calls),
    calls: calls.slice(),
  };
}

/** The usage of a `decide:<t>` step's record, or undefined for any other log event. */
export function callOfEvent(event: {
  type: string;
  payload: JsonValue;
}): ModelCallUsage | undefined {
  if (event.type !== 'step.completed') return undefined;
  const payload = event.payload as { name?: unknown; result?: unknown };
  if (typeof payload.name !== 'string' || !payload.name.startsWith('decide:')) return undefined;
  return callUsageOf(
    Number(payload.name.slice('decide:'.length)),
    payload.result as unknown as ModelResponse,
  );
}

/** One call's usage, from its recorded response. */
export function callUsageOf(turn: number, response: ModelResponse): ModelCallUsage {
  return {
    turn,
    provider: response.provider,
    model: response.model,
    ...(response.route === undefined ? {} : { route: response.route }),
    inputTokens: response.usage.inputTokens,
    outputTokens: response.usage.outputTokens,
    cachedInputTokens: response.usage.cachedInputTokens,
    costUsd: response.costUsd,
    latencyMs: response.latencyMs,
    fallbacks: response.fallbacks ?? [],
  };
}

/**
 * A run's state while it is driven: the finished turns (frozen as they finish, loaded once per
 * start or resume by replay), usage, and the counters the limits read.
 */
export class RunMemory {
  private readonly turns: TurnView[] = [];
  private readonly usage: UsageTotals = noUsage();
  /** Each model call's usage, in turn order: what the log's `decide:<t>` records say. */
  readonly calls: ModelCallUsage[] = [];
  /** The agent's input, deep-frozen once per start or resume: no consumer can change it for another. */
  readonly input: JsonValue;
  private lastCall = '';
  private repeats = 0;
  private failuresInARow = 0;
  private refusedAnswers = 0;

  constructor(
    readonly runId: string,
    input: JsonValue,
  ) {
    // A string or number input (the common case) is its own frozen copy: no clone to make.
    this.input =
      typeof input === 'object' && input !== null ? deepFreeze(structuredClone(input)) : input;
  }

  /**
   * The finished turns as the renderer wants them: a new array per call (its turns are frozen),
   * so a prompt function that edits it changes nothing for the policy, the store or a later turn.
   */
  get history(): HistoryStep[] {
    return this.turns.slice();
  }

  get decidedTurns(): number {
    return this.usage.modelCalls;
  }

  /** A fresh view for one consumer; the turns in it are frozen. */
  view(turn: number): RunView {
    return Object.freeze({
      runId: this.runId,
      input: this.input,
      turn,
      turns: Object.freeze(this.turns.slice()),
    });
  }

  /** Counts one model call (the answer of `turn`). */
  addUsage(turn: number, response: ModelResponse): void {
    const call = callUsageOf(turn, response);
    addCall(this.usage, call);
    this.calls.push(call);
  }

  /** Tokens (input + output) and known cost so far. */
  get spent(): { tokens: number; costUsd: number } {
    return {
      tokens: this.usage.inputTokens + this.usage.outputTokens,
      costUsd: this.usage.costUsd,
    };
  }

  /** Counts `call` against the calls before it; returns how many times in a row it was asked for. */
  repeated(call: ToolCall): number {
    const signature = `${call.tool}\u0000${canonicalJson(call.input)}`;
    this.repeats = signature === this.lastCall ? this.repeats + 1 : 1;
    this.lastCall = signature;
    return this.repeats;
  }

  /** Counts one final answer refused by the output schema; returns how many so far. */
  refuseAnswer(): number {
    this.refusedAnswers += 1;
    return this.refusedAnswers;
  }

  /** Counts one executed tool call; returns the failures in a row so far. */
  toolOutcome(failed: boolean): number {
    this.failuresInARow = failed ? this.failuresInARow + 1 : 0;
    return this.failuresInARow;
  }

  finishTurn(
    turn: number,
    text: string,
    calls: readonly ToolCall[],
    observations: Observation[],
  ): void {
    this.turns.push(deepFreeze({ turn, text, calls: calls.slice(), observations }));
  }

  end(reason: TerminalReason, detail: { output?: JsonValue; error?: string } = {}): RunOutput {
    return {
      reason,
      ...(detail.output === undefined ? {} : { output: detail.output }),
      ...(detail.error === undefined ? {} : { error: detail.error }),
      turns: this.usage.modelCalls,
      usage: { ...this.usage },
    };
  }
}
