import { isLoomError as isKernelError, type JsonValue } from '@loom/event-runtime';
import type { TurnContext } from './flow-host.js';

/** The signal that carries a user's message into a thread (its idempotency key names its number). */
export const threadMessageSignal = 'thread:message';

/** What a message signal carries. */
export interface ThreadMessagePayload {
  /** The message's number, from 1: the sender's count of earlier messages + 1. */
  n: number;
  text: string;
  messageId?: string;
  sentAtMs: number;
}

/** The input of a turn's run: the thread, the message's number and its text. */
export interface ThreadTurnInput {
  '~thread': { id: string; message: number };
  text: string;
}

/**
 * The version a thread's flow is pinned at: its loop's, not its agent's. A thread lives across
 * deploys; a new agent version changes the turns it starts from then on, never the loop, so a
 * thread started before the deploy is resumed by the new process.
 */
export const threadFlowVersion = '1';

/** A thread's flow name: `agent-thread:<agent>`. */
export function threadFlowName(agentName: string): string {
  return `agent-thread:${agentName}`;
}

/** The run that answers message `message` of thread `threadId`. */
export function turnRunId(threadId: string, message: number): string {
  return `${threadId}/${message}`;
}

/** The signal's idempotency key: one message per number, so of two senders at once one wins. */
export function messageKey(message: number): string {
  return `${threadMessageSignal}:${message}`;
}

/** The thread turn an agent run's input names, or undefined for an ordinary run. */
export function threadTurnOf(
  input: JsonValue,
): { threadId: string; message: number; text: string } | undefined {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return undefined;
  const thread = (input as Record<string, JsonValue>)['~thread'];
  const text = (input as Record<string, JsonValue>).text;
  if (typeof thread !== 'object' || thread === null || Array.isArray(thread)) return undefined;
  const { id, message } = thread as Record<string, JsonValue>;
  if (typeof id !== 'string' || typeof message !== 'number' || typeof text !== 'string') {
    return undefined;
  }
  return { threadId: id, message, text };
}

/**
 * The body of a thread: a loop that waits for the next message (suspended, holding nothing, while
 * none is there) and runs its turn as a durable child run of the agent (`<threadId>/<n>`),
 * one at a time, in the order the messages arrived. A turn that ends any way (an interrupt
 * cancels it) makes room for the next.
 */
export function threadRun(
  agentFlow: string,
): (ctx: TurnContext, input: JsonValue) => Promise<JsonValue> {
  return async (ctx) => {
    for (let n = 1; ; n++) {
      const wait = await ctx.waitForSignal(threadMessageSignal, undefined);
      if (!wait.received) {
        throw new Error(`broken invariant: thread ${ctx.runId}'s wait without a timeout timed out`);
      }
      const payload = wait.payload as unknown as ThreadMessagePayload;
      // Check in pairs: the sender numbered the message by what the inbox held; the thread
      // takes the inbox in order, so the two counts agree unless the inbox was written by hand.
      if (payload?.n !== n || typeof payload.text !== 'string') {
        throw new Error(
          `broken invariant: thread ${ctx.runId} took message ${JSON.stringify(payload?.n)} as its message ${n}: its inbox was written other than by send()`,
        );
      }
      const input: ThreadTurnInput = {
        '~thread': { id: ctx.runId, message: n },
        text: payload.text,
      };
      try {
        await ctx.child(agentFlow, input as unknown as JsonValue, turnRunId(ctx.runId, n));
      } catch (error) {
        // A turn cancelled (an interrupt, an operator) or failed ends; the thread goes on.
        if (!isKernelError(error, 'CHILD_FAILED')) throw error;
      }
    }
  };
}
