import type { JsonValue } from '@loom/event-runtime';
import type { ToolCall } from '@loom/reasoning';
import type { AgentStream } from './agent-event.js';
import type { RunResult } from './run-result.js';

/**
 * What a thread does with a message that arrives while a turn runs (ADR 0049):
 * - `queue`: it is accepted and answered after the turns before it, in order.
 * - `reject`: `send` throws `THREAD_BUSY` (nothing is recorded: send it again later).
 * - `interrupt`: it is accepted and the running turn is cancelled (its run ends
 *   `operator_cancelled`); the new message is answered with the interrupted turn in its history.
 *   A turn that has not started yet is replaced: it ends `operator_cancelled` before any model
 *   call, and its message is in the next turn's history, unanswered.
 */
export type ThreadBusy = 'queue' | 'reject' | 'interrupt';

/** The thread behaviour of an agent (`defineAgent({ thread })`). */
export interface ThreadOptions {
  /** What a message that arrives while a turn runs does; default `'queue'`. */
  busy?: ThreadBusy;
}

/** Messages a thread takes in all: 1 000. A thread's own log grows by a few events per message. */
export const threadMessagesMax = 1_000;

/**
 * Earlier exchanges a turn reads back into its prompt at most: 200. Fewer when the budget fills
 * first: they are read newest first and the reading stops at `budgetTokens`.
 */
export const threadHistoryExchangesMax = 200;

/** One message of a thread, as `thread.messages()` lists it. */
export type ThreadMessage =
  | {
      readonly role: 'user';
      /** The message's number in the thread, from 1: its turn's run is `<threadId>/<message>`. */
      readonly message: number;
      readonly runId: string;
      readonly text: string;
      /** The id the sender gave (`send(text, { messageId })`), if any. */
      readonly messageId?: string;
    }
  | {
      readonly role: 'assistant';
      readonly message: number;
      readonly runId: string;
      readonly text: string;
      readonly toolCalls?: readonly ToolCall[];
    }
  | {
      readonly role: 'tool';
      readonly message: number;
      readonly runId: string;
      readonly callId: string;
      readonly tool: string;
      /** The result (or error) as the model saw it. */
      readonly content: string;
      readonly isError?: true;
    };

/** What `send` takes besides the text. */
export interface SendOptions {
  /**
   * The sender's id for this message (1–200 characters): a `send` that finds a message with this
   * id in the thread returns its turn instead of sending it again (a client retrying after a
   * lost response).
   */
  messageId?: string;
}

/** The turn that answers one message: a run of the thread's agent, `<threadId>/<message>`. */
export interface ThreadTurn<O = JsonValue> {
  readonly threadId: string;
  /** The message's number in the thread, from 1. */
  readonly message: number;
  /** The run that answers it (it may not have started yet: queued behind an earlier turn). */
  readonly runId: string;
  /** How the turn ended: `output` is the reply. Waits for a queued turn to start and end. */
  result(): Promise<RunResult<O>>;
}

/** A conversation with one agent, addressed by its id. */
export interface AgentThread<O = JsonValue> {
  readonly threadId: string;
  /**
   * Sends the user's message: durable once it returns. The reply is `(await turn.result()).output`;
   * `agents.stream(turn)` follows it.
   */
  send(text: string, options?: SendOptions): Promise<ThreadTurn<O>>;
  /**
   * The thread's messages, oldest first: each user message, then its turn's steps and reply (a
   * turn not started yet has only its user message). Reads every turn's log.
   */
  messages(): Promise<ThreadMessage[]>;
  /** Follows the turn of message `message` (see `agents.stream`). */
  stream(turn: ThreadTurn<O> | number): AgentStream;
  /**
   * The turn of message `message` (from 1), from any process: its `result()` is typed by the
   * agent's `output`. Reads nothing until `result()` is called (it waits for a turn not started).
   */
  turn(message: number): ThreadTurn<O>;
  /**
   * The turn of the thread's newest message if it has not ended (queued behind an earlier turn,
   * running, or waiting for a person), else undefined (no message yet, or all answered): what a
   * client that reconnects to the chat should follow. Reads the thread's inbox and one status.
   */
  activeTurn(): Promise<ThreadTurn<O> | undefined>;
}
