import type { JsonValue } from '@loom/event-runtime';
import type { AgentEvent } from '../agent-event.js';
import type { RunResult, TerminalReason } from '../run-result.js';
import type { ParsedCursor } from '../stream-cursor.js';
import type { UiMessageChunk } from './ui-message-chunk.js';

/** A tool call's id in the UI message: unique across the run's turns. */
export function uiToolCallId(turn: number, callId: string): string {
  return `${turn}.${callId}`;
}

/** A text part's id: one per attempt of a turn's model call. */
export function uiTextId(turn: number, attempt: string): string {
  return `text-${turn}-${attempt}`;
}

function finishReason(result: RunResult): 'stop' | 'length' | 'error' | 'other' {
  switch (result.reason) {
    case 'goal_completed':
      return 'stop';
    case 'goal_failed':
    case 'model_failed':
    case 'output_invalid':
      return 'error';
    case 'limit_tokens':
    case 'context_exceeded':
      return 'length';
    default:
      return 'other';
  }
}

/**
 * What a client is told of an ending without an answer whose result carries no `error` text.
 * Every ending the agent loop writes but `operator_cancelled` carries one; these are the floor.
 */
const endingWithoutAnswer: Record<Exclude<TerminalReason, 'goal_completed'>, string> = {
  goal_failed: 'the model gave up on the goal',
  limit_steps: 'the run reached its limit of turns',
  limit_tool_failures: 'too many tool calls failed in a row',
  limit_tokens: 'the run reached its token budget',
  limit_cost: 'the run reached its cost budget',
  limit_time: 'the run reached its time limit',
  loop_detected: 'the model asked for the same tool call again and again',
  policy_aborted: 'the policy ended the run',
  approval_rejected: 'a person rejected a tool call and ended the run',
  approval_expired: 'an approval was not decided in time',
  context_exceeded: 'the conversation no longer fits the model’s context',
  model_failed: 'the model call failed',
  output_invalid: 'the model’s answers did not fit the output schema',
  operator_cancelled: 'an operator cancelled the run',
};

/**
 * The `error` chunk of a run that ended without an answer: `<reason>: <what went wrong>`, the
 * reason first so a client can branch on it (`useChat`'s `error.message`) and a person can read
 * the rest. `undefined` for `goal_completed`.
 */
export function endingErrorText(result: RunResult): string | undefined {
  if (result.reason === 'goal_completed') return undefined;
  const said = result.error?.trim() ?? '';
  return `${result.reason}: ${said === '' ? endingWithoutAnswer[result.reason] : said}`;
}

/**
 * Turns an agent run's events into UI message stream chunks: one assistant message for the run,
 * a step per turn, a text part per attempt of a turn's answer (streamed deltas, or the recorded
 * text of a turn the stream did not see being written), a tool part per call. A retracted
 * attempt's part is ended, the step's parts so far are dropped (`reset-step`: only withdrawn text),
 * and a `data-loom-text-retracted` part names the attempt. A run that
 * answers gets a `data-loom-output` part with its `output` (the structured answer of an agent with
 * an `output` schema, else the final text); one that ends without an answer (any reason but
 * `goal_completed`) gets an `error` chunk before `finish`.
 */
export class UiChunkWriter {
  private stepOpen: boolean;
  private openText: string | undefined;
  /** Turns with text shown as deltas (their recorded text is not repeated). */
  private readonly streamedTurns = new Set<number>();

  /** `resumed`: where a previous response stopped (its client has the message so far). */
  constructor(resumed?: ParsedCursor) {
    this.stepOpen = resumed !== undefined && resumed.sequence >= 0;
    const text = resumed?.text;
    if (text !== undefined && text.length > 0) {
      this.openText = uiTextId(text.turn, text.attempt);
      this.streamedTurns.add(text.turn);
    }
  }

  start(messageId: string): UiMessageChunk[] {
    return [{ type: 'start', messageId }];
  }

  event(event: AgentEvent): UiMessageChunk[] {
    const out: UiMessageChunk[] = [];
    switch (event.type) {
      case 'turn_started':
        this.endText(out);
        if (this.stepOpen) out.push({ type: 'finish-step' });
        out.push({ type: 'start-step' });
        this.stepOpen = true;
        break;
      case 'text_delta': {
        const id = uiTextId(event.turn, event.attempt);
        if (this.openText !== id) {
          this.endText(out);
          out.push({ type: 'text-start', id });
          this.openText = id;
        }
        this.streamedTurns.add(event.turn);
        out.push({ type: 'text-delta', id, delta: event.text });
        break;
      }
      case 'text_retracted': {
        const id = uiTextId(event.turn, event.attempt);
        if (this.openText === id) this.endText(out);
        // `reset-step` makes the AI SDK's reader drop the parts of the turn's step so far: before
        // the turn's answer is recorded they are only the text of attempts that never finished
        // (the stream retracts before it yields `model_responded`), so the withdrawn text leaves
        // the page. (A text part in a UIMessage keeps no id: naming it would not reach it.)
        out.push({ type: 'reset-step' });
        out.push({
          type: 'data-loom-text-retracted',
          id,
          data: { turn: event.turn, attempt: event.attempt, length: event.length },
        });
        break;
      }
      case 'model_responded':
        if (!this.streamedTurns.has(event.turn) && event.text !== '') {
          const id = uiTextId(event.turn, 'recorded');
          this.endText(out);
          out.push({ type: 'text-start', id }, { type: 'text-delta', id, delta: event.text });
          out.push({ type: 'text-end', id });
        }
        this.endText(out);
        for (const call of event.toolCalls) {
          out.push({
            type: 'tool-input-available',
            toolCallId: uiToolCallId(event.turn, call.callId),
            toolName: call.tool,
            input: call.input,
          });
        }
        break;
      case 'tool_completed': {
        const toolCallId = uiToolCallId(event.turn, event.callId);
        if (event.outcome === 'result') {
          out.push({ type: 'tool-output-available', toolCallId, output: event.output ?? null });
        } else {
          out.push({
            type: 'tool-output-error',
            toolCallId,
            errorText:
              event.outcome === 'interrupted'
                ? 'interrupted: a crash left its outcome unknown; an operator decides'
                : (event.error ?? 'error'),
          });
        }
        break;
      }
      case 'approval_required':
        out.push({
          type: 'tool-approval-request',
          approvalId: event.approval.id,
          toolCallId: uiToolCallId(event.approval.request.turn, event.approval.request.callId),
        });
        break;
      case 'question_asked':
        out.push({
          type: 'data-loom-question',
          id: event.question.id,
          data: event.question as unknown as JsonValue,
        });
        break;
      case 'finished': {
        this.endText(out);
        if (this.stepOpen) out.push({ type: 'finish-step' });
        this.stepOpen = false;
        const { result } = event;
        // The answer as the agent's `output` (validated against its schema), so a page shows the
        // structured answer without parsing text: one data part, replaced if it came again.
        if (result.reason === 'goal_completed' && result.output !== undefined) {
          out.push({
            type: 'data-loom-output',
            id: result.runId,
            data: result.output,
          });
        }
        // The AI SDK's reader turns an `error` chunk into the chat's error (`useChat().error`);
        // `finish` alone would leave a failed run looking like an empty answer.
        const errorText = endingErrorText(result);
        if (errorText !== undefined) out.push({ type: 'error', errorText });
        out.push({
          type: 'finish',
          finishReason: finishReason(result),
          messageMetadata: {
            runId: result.runId,
            reason: result.reason,
            turns: result.turns,
            usage: result.usage as unknown as JsonValue,
          },
        });
        break;
      }
      default:
        break;
    }
    return out;
  }

  /** A failure of the stream: the open part and step end, then the error. */
  error(message: string): UiMessageChunk[] {
    const out: UiMessageChunk[] = [];
    this.endText(out);
    out.push({ type: 'error', errorText: message });
    return out;
  }

  private endText(out: UiMessageChunk[]): void {
    if (this.openText === undefined) return;
    out.push({ type: 'text-end', id: this.openText });
    this.openText = undefined;
  }
}
