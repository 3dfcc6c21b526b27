import type { JsonValue } from '@loom/event-runtime';
import type { FallbackRecord } from '@loom/reasoning';

/**
 * Why a run ended:
 * - `goal_completed`: the model answered with text and no tool call (`output` is the text).
 * - `goal_failed`: the model called the built-in `fail_goal` tool (`error` is its reason).
 * - `limit_steps`: `stepsMax` turns were decided without an ending.
 * - `limit_tool_failures`: `consecutiveToolFailuresMax` tool calls failed in a row.
 * - `limit_tokens`: the model calls' input + output tokens reached `tokensMax` (checked after each call).
 * - `limit_cost`: their known cost reached `costUsdMax` (calls of unknown cost count nothing).
 * - `limit_time`: `wallTimeMsMax` ms passed since the run's recorded start (checked at each
 *   turn's start and while the run waits: a model call, an approval, a question).
 * - `loop_detected`: the same call (tool and arguments) was asked for `repeatedCallsMax` times in a row.
 * - `policy_aborted`: the policy answered `abort` (`error` is its reason).
 * - `approval_rejected`: a person rejected with `endRun`, or rejected re-running an interrupted call.
 * - `approval_expired`: an approval's `expiresInMs` passed undecided (with `onExpire: 're-ask'`,
 *   the last of its `asksMax` asks).
 * - `context_exceeded`: the prompt's required parts no longer fit `budgetTokens` (the
 *   instructions, tools, input and newest turn alone are over it).
 * - `model_failed`: the model call failed after its own retries (`error` says how).
 * - `output_invalid`: an agent with an `output` schema gave `outputAttemptsMax` final answers
 *   that were not JSON or did not fit it (`error` names the last problem).
 * - `operator_cancelled`: `cancel(runId)`.
 */
export type TerminalReason =
  | 'goal_completed'
  | 'goal_failed'
  | 'limit_steps'
  | 'limit_tool_failures'
  | 'limit_tokens'
  | 'limit_cost'
  | 'limit_time'
  | 'loop_detected'
  | 'policy_aborted'
  | 'approval_rejected'
  | 'approval_expired'
  | 'context_exceeded'
  | 'model_failed'
  | 'output_invalid'
  | 'operator_cancelled';

/**
 * Model usage summed over a run. `costUsd` sums the calls whose cost is known; `costUnknownCalls`
 * counts the rest. `latencyMs` sums the calls' latencies (on each provider's clock); `fallbacks`
 * counts the router routes left before an answer, over all calls.
 */
export interface UsageTotals {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  costUsd: number;
  costUnknownCalls: number;
  latencyMs: number;
  fallbacks: number;
}

/**
 * What one model call of a run used, as its recorded response says: tokens (`null` when the
 * provider did not report that count), cost (`null` = unknown), latency, and the router routes
 * tried and left before the one that answered.
 */
export interface ModelCallUsage {
  /** The turn whose decision the call was, from 1. */
  turn: number;
  provider: string;
  model: string;
  /** The router route that answered; absent without a router. */
  route?: string;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedInputTokens: number | null;
  costUsd: number | null;
  latencyMs: number;
  fallbacks: FallbackRecord[];
}

/** How a run ended. */
export interface RunResult<O = JsonValue> {
  readonly runId: string;
  readonly reason: TerminalReason;
  /**
   * For `goal_completed`: the final text, or, for an agent with an `output` schema, the answer
   * parsed from JSON and checked against it.
   */
  readonly output?: O;
  /** What went wrong, for the other endings. */
  readonly error?: string;
  /** Turns decided (model calls made). */
  readonly turns: number;
  /** The sums over {@link RunResult.calls}. */
  readonly usage: UsageTotals;
  /**
   * Each model call's usage, oldest first, read from the log's `decide:<t>` records when the
   * result is read (the recorded output holds only the sums, so it does not grow with the run).
   */
  readonly calls: readonly ModelCallUsage[];
}
