import type { JsonValue } from '@loom/event-runtime';
import type { ToolCall } from '@loom/reasoning';
import type { Approval } from './approval.js';
import type { Question } from './question.js';
import type { ModelCallUsage, RunResult } from './run-result.js';

/**
 * What every event of {@link AgentEvent} carries. `replayed` is true for an event read from the
 * log as it stood when the stream opened (history), false for one that happened while the
 * stream was open. `sequence` is the log event it comes from (absent on `text_delta` and `text_retracted`, which are
 * never journaled): it only grows along a stream, so a consumer can tell events apart by it.
 */
export interface AgentEventBase {
  readonly runId: string;
  readonly replayed: boolean;
  readonly sequence?: number;
}

/**
 * One thing that happened in an agent run, as `agents.stream(runId)` yields it.
 *
 * - `turn_started`: the turn's model call is about to be made (its `decide:<t>` step is durable).
 * - `text_delta`: text of the turn's answer as the model streams it, coalesced (one event per
 *   burst, not per token), from whichever process makes the call (ADR 0050). `offset` is where
 *   `text` starts in the text of `attempt` (one attempt of the call: a retry or a resume on
 *   another process is a new one): each code unit is delivered once, in order. Never journaled.
 *   For a turn the stream follows while it is written, the deltas after the last
 *   `text_retracted` add up to exactly `model_responded.text` (the stream completes them from the
 *   recorded answer); turns the log already held when the stream opened get none.
 * - `text_retracted`: the `length` code units of `attempt` shown so far are withdrawn: that
 *   attempt never finished (its process died or the call failed and was retried), or what it
 *   streamed is not what was recorded. The deltas that follow replace it.
 * - `model_responded`: the model's recorded answer and that call's {@link ModelCallUsage}.
 * - `tool_started`: the call is marked started; the tool is about to be called (`attempt` > 1
 *   for a call re-run after an `interrupted_side_effect` approval).
 * - `tool_completed`: the call's outcome: `result` (with `output`), `error` (with `error`), or
 *   `interrupted` (a non-rerunnable call whose outcome a crash left unknown: it was not called
 *   again, and an `approval_required` follows).
 * - `approval_required`: an approval is recorded and the run waits for a person.
 * - `question_asked`: the model asked a person a question through `ask_human`.
 * - `finished`: the run ended; the last event of every stream.
 */
export type AgentEvent = AgentEventBase &
  (
    | { readonly type: 'turn_started'; readonly turn: number }
    | {
        readonly type: 'text_delta';
        readonly turn: number;
        readonly attempt: string;
        readonly offset: number;
        readonly text: string;
      }
    | {
        readonly type: 'text_retracted';
        readonly turn: number;
        readonly attempt: string;
        readonly length: number;
      }
    | {
        readonly type: 'model_responded';
        readonly turn: number;
        readonly text: string;
        readonly toolCalls: readonly ToolCall[];
        readonly usage: ModelCallUsage;
      }
    | {
        readonly type: 'tool_started';
        readonly turn: number;
        readonly callId: string;
        readonly tool: string;
        readonly attempt: number;
      }
    | {
        readonly type: 'tool_completed';
        readonly turn: number;
        readonly callId: string;
        readonly tool: string;
        readonly attempt: number;
        readonly outcome: 'result' | 'error' | 'interrupted';
        readonly output?: JsonValue;
        readonly error?: string;
      }
    | { readonly type: 'approval_required'; readonly approval: Approval }
    | { readonly type: 'question_asked'; readonly question: Omit<Question, 'status'> }
    | { readonly type: 'finished'; readonly result: RunResult }
  );

/** The `type` of an {@link AgentEvent}. */
export type AgentEventType = AgentEvent['type'];

/**
 * A run's events as an async iterable (`for await`): the log's events first (`replayed: true`),
 * then live ones, ending after `finished`. Leaving the loop early (or `close()`) stops it.
 */
export interface AgentStream extends AsyncIterableIterator<AgentEvent> {
  /**
   * Where the consumer stands after the events it took so far: pass it as
   * `agents.stream(runId, { after: cursor })` (from any process) to go on from there, without
   * an event or a code unit of text twice. An opaque short string (an SSE event id).
   */
  readonly cursor: string;
  /** Stops the stream; resolves once it holds no subscription. */
  close(): Promise<void>;
}

/** Options of `agents.stream(run, options)`. */
export interface StreamOptions {
  /** Go on after this {@link AgentStream.cursor}: earlier events and text are not delivered again. */
  after?: string;
}
