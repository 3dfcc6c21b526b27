import { EventType, type JsonValue, type StoredEvent } from '@loom/event-runtime';
import type { ToolCall } from '@loom/reasoning';
import { type Exchange, type HistoryStep, type Observation, renderMessages } from '@loom/render';
import { threadHistoryExchangesMax } from '../thread.js';
import { RunEventDecoder } from './run-event-decoder.js';
import { threadTurnOf, turnRunId } from './thread-flow.js';

/** A policy verdict as `policy:<t>` records it: what history needs of it. */
interface RecordedVerdict {
  callId?: string;
  kind?: string;
  message?: string;
  decision?: { kind?: string; reason?: string };
}

/**
 * One turn run's exchange, folded from its log: the user's message (its input's text), and per
 * decided turn the model's text, its calls and one observation per call (its result or error;
 * the policy's denial or the invalid arguments; else that it did not run: the turn was
 * interrupted, cancelled or refused first). Undefined when the log is not a thread turn's.
 */
export function exchangeOf(events: readonly StoredEvent[]): Exchange | undefined {
  const started = events[0];
  if (started?.type !== EventType.executionStarted) return undefined;
  const turn = threadTurnOf((started.payload as { input?: JsonValue }).input ?? null);
  if (turn === undefined) return undefined;
  const decoder = new RunEventDecoder(started.executionId);
  const texts = new Map<number, { text: string; calls: readonly ToolCall[] }>();
  const outcomes = new Map<string, Observation>();
  for (const event of events) {
    const name = (event.payload as { name?: unknown }).name;
    if (
      event.type === EventType.stepCompleted &&
      typeof name === 'string' &&
      name.startsWith('policy:')
    ) {
      const verdicts = (event.payload as { result?: unknown }).result;
      for (const verdict of Array.isArray(verdicts) ? (verdicts as RecordedVerdict[]) : []) {
        const observation = verdictObservation(verdict);
        if (observation !== undefined) outcomes.set(observation.callId as string, observation);
      }
    }
    for (const decoded of decoder.decode(event, true)) {
      if (decoded.type === 'model_responded') {
        texts.set(decoded.turn, { text: decoded.text, calls: decoded.toolCalls });
      } else if (decoded.type === 'tool_completed' && decoded.outcome !== 'interrupted') {
        outcomes.set(
          decoded.callId,
          decoded.outcome === 'result'
            ? { kind: 'tool_result', callId: decoded.callId, content: decoded.output ?? null }
            : { kind: 'tool_error', callId: decoded.callId, message: decoded.error ?? '' },
        );
      }
    }
  }
  const steps: HistoryStep[] = [];
  for (const turnNumber of [...texts.keys()].sort((a, b) => a - b)) {
    const { text, calls } = texts.get(turnNumber) as { text: string; calls: readonly ToolCall[] };
    if (calls.length === 0) {
      if (text !== '') steps.push({ text });
      continue;
    }
    steps.push({
      text,
      calls,
      observations: calls.map(
        (call) =>
          outcomes.get(call.callId) ?? {
            kind: 'tool_error',
            callId: call.callId,
            message: 'not run: the turn ended before this call had a result',
          },
      ),
    });
  }
  return { user: turn.text, steps };
}

function verdictObservation(verdict: RecordedVerdict): Observation | undefined {
  if (typeof verdict?.callId !== 'string') return undefined;
  if (verdict.kind === 'invalid') {
    return { kind: 'invalid_decision', callId: verdict.callId, message: String(verdict.message) };
  }
  if (verdict.kind === 'decided' && verdict.decision?.kind === 'deny') {
    return { kind: 'denied', callId: verdict.callId, reason: String(verdict.decision.reason) };
  }
  return undefined;
}

/** The tokens an exchange takes in a prompt, by the renderer's default tokenizer (as a turn renders). */
export function exchangeTokens(exchange: Exchange): number {
  return renderMessages(
    { kind: 'conversation', exchanges: [exchange] },
    { tokenBudget: Number.POSITIVE_INFINITY },
  ).tokens;
}

/**
 * The exchanges of a thread's messages before `message`, oldest first, read newest first from
 * their turns' logs until `budgetTokens` is full (what would not fit is not read; the renderer
 * drops what still does not fit with the turn's own parts) or {@link threadHistoryExchangesMax}
 * were read. The turns before a running one have all ended, so their logs no longer change and a
 * replay reads the same.
 */
export async function threadHistory(
  read: (runId: string) => Promise<StoredEvent[]>,
  threadId: string,
  message: number,
  budgetTokens: number,
): Promise<Exchange[]> {
  const out: Exchange[] = [];
  let tokens = 0;
  for (let k = message - 1; k >= 1 && out.length < threadHistoryExchangesMax; k--) {
    const exchange = exchangeOf(await read(turnRunId(threadId, k)));
    if (exchange === undefined) continue;
    tokens += exchangeTokens(exchange);
    if (tokens > budgetTokens) break;
    out.push(exchange);
  }
  return out.reverse();
}
