import {
  isLoomError as isKernelError,
  type JsonValue,
  type StoredEvent,
  type StoredSignal,
} from '@loom/event-runtime';
import { renderHistory } from '@loom/render';
import type { AgentStream } from './agent-event.js';
import type { Agent } from './define-agent.js';
import { AgentErrorCode, LoomError } from './errors.js';
import type { HostedFlow } from './internal/flow-host.js';
import {
  messageKey,
  type ThreadMessagePayload,
  threadFlowName,
  threadMessageSignal,
  turnRunId,
} from './internal/thread-flow.js';
import { exchangeOf } from './internal/thread-history.js';
import type { RunResult } from './run-result.js';
import {
  type AgentThread,
  type SendOptions,
  type ThreadMessage,
  type ThreadTurn,
  threadMessagesMax,
} from './thread.js';

/** Characters of a thread id: 1 to 190 (its turns' run ids, `<threadId>/<n>`, fit the kernel's 200). */
export const threadIdLengthMax = 190;

/** Times a `send` numbers its message again after another sender took the number first: 16. */
const sendAttemptsMax = 16;

/** What a thread needs of the agent runtime: the flow runtime's calls, and a run's stream. */
export interface ThreadPort {
  /** `existing`: the execution was there already (it is in the log when this returns). */
  start(flow: HostedFlow, input: JsonValue, runId: string): Promise<{ existing: boolean }>;
  status(runId: string): Promise<string>;
  read(runId: string): Promise<StoredEvent[]>;
  readPage(runId: string, fromSequence: number, limit: number): Promise<StoredEvent[]>;
  readSignals(runId: string): Promise<StoredSignal[]>;
  signal(
    runId: string,
    name: string,
    payload: JsonValue,
    idempotencyKey: string,
  ): Promise<{ duplicate: boolean }>;
  cancel(runId: string, reason: string): Promise<boolean>;
  nowMs(): number;
  stream(runId: string): AgentStream;
}

const settled = new Set(['completed', 'failed', 'cancelled', 'continued']);

/** Checks a thread id: 1 to {@link threadIdLengthMax} characters, no `/` (it separates turns). */
function checkThreadId(threadId: unknown): string {
  if (
    typeof threadId !== 'string' ||
    threadId.length === 0 ||
    threadId.length > threadIdLengthMax ||
    threadId.includes('/')
  ) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `a thread id is 1 to ${threadIdLengthMax} characters without '/', got ${JSON.stringify(threadId)}`,
      { threadId: String(threadId) },
    );
  }
  return threadId;
}

/** The thread's message signals, oldest first (the order the thread takes them in). */
function messagesIn(signals: readonly StoredSignal[]): ThreadMessagePayload[] {
  return signals
    .filter((signal) => signal.name === threadMessageSignal)
    .map((signal) => signal.payload as unknown as ThreadMessagePayload);
}

/**
 * A thread of `agent` (ADR 0049): the thread is a durable execution `threadId` that takes each
 * message from its inbox in order and runs its turn as a child run `<threadId>/<n>`.
 */
export function agentThread<O>(
  port: ThreadPort,
  agent: Agent<O>,
  flow: HostedFlow,
  threadIdGiven: string,
): AgentThread<O> {
  const threadId = checkThreadId(threadIdGiven);
  const turnOf = (message: number): ThreadTurn<O> => {
    const runId = turnRunId(threadId, message);
    let ended: Promise<RunResult<O>> | undefined;
    return {
      threadId,
      message,
      runId,
      result: () => {
        ended ??= finishedOf(port.stream(runId)) as Promise<RunResult<O>>;
        return ended;
      },
    };
  };

  /** Starts the thread's execution if it is not there yet; refuses one of another agent. */
  const open = async (): Promise<void> => {
    let first = (await port.readPage(threadId, 0, 1))[0];
    if (first === undefined) {
      // Idempotent on the id, and the thread is in the log once the start returns, whichever
      // of two first senders (in this process or another) wrote it.
      if (!(await port.start(flow, { agent: agent.name }, threadId)).existing) return;
      // Another first sender started it a moment ago: check it as any existing thread.
      first = (await port.readPage(threadId, 0, 1))[0];
    }
    checkOwner(first);
  };
  /** Refuses a thread whose first event (`execution.started`) is not a thread of this agent's. */
  const checkOwner = (first: StoredEvent | undefined): void => {
    const flowName = (first?.payload as { flow?: unknown } | undefined)?.flow;
    if (flowName !== threadFlowName(agent.name)) {
      throw new LoomError(
        AgentErrorCode.INVALID_ARGUMENT,
        `'${threadId}' is not a thread of agent '${agent.name}' (its execution runs ${JSON.stringify(flowName)}): pick another thread id`,
        { threadId, agent: agent.name },
      );
    }
  };

  const send = async (text: string, options: SendOptions = {}): Promise<ThreadTurn<O>> => {
    if (typeof text !== 'string') {
      throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, 'a message is a string of text', {
        threadId,
      });
    }
    const { messageId } = options;
    if (
      messageId !== undefined &&
      (typeof messageId !== 'string' || messageId.length === 0 || messageId.length > 200)
    ) {
      throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, 'messageId is 1 to 200 characters', {
        threadId,
      });
    }
    await open();
    const { busy } = agent.thread;
    for (let attempt = 1; attempt <= sendAttemptsMax; attempt++) {
      const earlier = messagesIn(await port.readSignals(threadId));
      const same =
        messageId === undefined ? undefined : earlier.find((m) => m.messageId === messageId);
      if (same !== undefined) return turnOf(same.n);
      const n = earlier.length + 1;
      if (n > threadMessagesMax) {
        throw new LoomError(
          AgentErrorCode.THREAD_FULL,
          `thread '${threadId}' has taken ${threadMessagesMax} messages (threadMessagesMax): start a new thread`,
          { threadId, max: threadMessagesMax },
        );
      }
      // Turns run one at a time, in order: the newest message's turn is the one that may run.
      const running = n === 1 ? undefined : await unsettledTurn(port, threadId, n - 1);
      if (busy === 'reject' && running !== undefined) throw busyError(threadId, running, text);
      const payload: ThreadMessagePayload = {
        n,
        text,
        ...(messageId === undefined ? {} : { messageId }),
        sentAtMs: port.nowMs(),
      };
      const sent = await port.signal(
        threadId,
        threadMessageSignal,
        payload as unknown as JsonValue,
        messageKey(n),
      );
      if (sent.duplicate) {
        // Another sender took number n a moment ago: a turn is now busy with it.
        if (busy === 'reject') throw busyError(threadId, turnRunId(threadId, n), text);
        continue;
      }
      if (busy === 'interrupt' && running !== undefined) {
        await interrupt(port, running, threadId, n);
      }
      return turnOf(n);
    }
    throw new LoomError(
      AgentErrorCode.THREAD_BUSY,
      `thread '${threadId}': ${sendAttemptsMax} other messages were numbered first while this one was sent; nothing was recorded, send it again`,
      { threadId, text },
    );
  };

  const messages = async (): Promise<ThreadMessage[]> => {
    const out: ThreadMessage[] = [];
    for (const payload of messagesIn(await port.readSignals(threadId))) {
      const runId = turnRunId(threadId, payload.n);
      out.push({
        role: 'user',
        message: payload.n,
        runId,
        text: payload.text,
        ...(payload.messageId === undefined ? {} : { messageId: payload.messageId }),
      });
      const steps = exchangeOf(await port.read(runId))?.steps ?? [];
      for (const m of renderHistory(steps)) {
        if (m.role === 'assistant') {
          out.push({
            role: 'assistant',
            message: payload.n,
            runId,
            text: m.content,
            ...(m.toolCalls === undefined ? {} : { toolCalls: m.toolCalls }),
          });
        } else if (m.role === 'tool') {
          out.push({
            role: 'tool',
            message: payload.n,
            runId,
            callId: m.callId,
            tool: m.tool,
            content: m.content,
            ...(m.isError === true ? { isError: true as const } : {}),
          });
        }
      }
    }
    return out;
  };

  const activeTurn = async (): Promise<ThreadTurn<O> | undefined> => {
    const first = (await port.readPage(threadId, 0, 1))[0];
    if (first === undefined) return undefined;
    checkOwner(first);
    const newest = messagesIn(await port.readSignals(threadId)).at(-1);
    if (newest === undefined) return undefined;
    return (await unsettledTurn(port, threadId, newest.n)) === undefined
      ? undefined
      : turnOf(newest.n);
  };

  return {
    threadId,
    send,
    messages,
    turn: (message) => {
      if (!Number.isSafeInteger(message) || message < 1) {
        throw new LoomError(
          AgentErrorCode.INVALID_ARGUMENT,
          `a message number is a whole number from 1, got ${JSON.stringify(message)}`,
          { threadId },
        );
      }
      return turnOf(message);
    },
    activeTurn,
    stream: (turn) =>
      port.stream(turnRunId(threadId, typeof turn === 'number' ? turn : turn.message)),
  };
}

/** The run of message `n`'s turn if it has not ended (not started yet counts as running). */
async function unsettledTurn(
  port: ThreadPort,
  threadId: string,
  n: number,
): Promise<string | undefined> {
  const runId = turnRunId(threadId, n);
  try {
    return settled.has(await port.status(runId)) ? undefined : runId;
  } catch (error) {
    if (isKernelError(error, 'EXECUTION_NOT_FOUND')) return runId;
    throw error;
  }
}

/** Cancels the running turn for message `n` (a turn not started yet, or just ended, is left). */
async function interrupt(
  port: ThreadPort,
  runId: string,
  threadId: string,
  n: number,
): Promise<void> {
  try {
    await port.cancel(runId, `interrupted by message ${n} of thread ${threadId}`);
  } catch (error) {
    if (!isKernelError(error, 'EXECUTION_NOT_FOUND')) throw error;
  }
}

function busyError(threadId: string, runId: string, text: string): LoomError {
  return new LoomError(
    AgentErrorCode.THREAD_BUSY,
    `thread '${threadId}' is answering a message (run ${runId}) and its agent rejects messages while it does (thread.busy 'reject'): nothing was recorded; send it again once that turn has ended`,
    { threadId, runId, text },
  );
}

/** The run's result, from the `finished` event of its stream (it waits for a run not started yet). */
async function finishedOf(stream: AgentStream): Promise<RunResult> {
  try {
    for await (const event of stream) {
      if (event.type === 'finished') return event.result;
    }
  } finally {
    await stream.close();
  }
  throw new Error('broken invariant: a run stream ended without its finished event');
}
