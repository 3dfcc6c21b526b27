// `runtime.query` and `runtime.update` (ADR 0061): a query replays the log read-only in the
// caller's process and asks the flow's handler; an update is an inbox signal carrying its id,
// idempotent by that id, whose answer the caller awaits on the execution's log.
import { randomUUID } from 'node:crypto';
import {
  type CancelTimer,
  type Clock,
  type EventStore,
  type ExecutionState,
  type Flow,
  type JsonValue,
  ErrorCode as KernelErrorCode,
  loadState,
  type StoredEvent,
  type Subscription,
} from '@loom/event-runtime';
import { isLoomError, LoomError, WorkflowErrorCode } from '../errors.js';
import { isQueryDefinition, type QueryDefinition } from './define-query.js';
import {
  isUpdateDefinition,
  type UpdateDefinition,
  updateAnswerStep,
  updateIdLengthMax,
  updateSignalName,
} from './define-update.js';
import { type Duration, parseDuration } from './duration.js';
import { replayReadOnly } from './read-only-replay.js';
import { validate } from './standard-schema.js';

/** What a query or an update needs of the runtime: its log, clock and flows. */
export interface ExecutionQueryHost {
  readonly store: EventStore;
  readonly clock: Clock;
  /** The flow registered here under `name` and `version`, if any. */
  flow(name: string, version: string | null): Flow<unknown, unknown> | undefined;
  /** Sends an inbox signal (the kernel runtime's `signal`). */
  signal(
    executionId: string,
    name: string,
    payload: unknown,
    options: { idempotencyKey: string },
  ): Promise<{ signalId: number; duplicate: boolean }>;
}

/** Options of `runtime.update`. */
export interface UpdateOptions {
  /**
   * Names this request (1 to 180 characters): a second `update` with the same id for the same
   * execution writes nothing and resolves with the same answer. Default: a fresh UUID (no
   * idempotency across calls). Pass your own to retry a call safely.
   */
  updateId?: string;
  /**
   * How long to wait for the answer (`'30s'`, `5_000`), counted from the call (sending the update
   * included); past it `UPDATE_TIMEOUT` (the update stays journaled). Default: no deadline.
   */
  timeout?: Duration;
}

/** Runs `query` with `arg` over execution `executionId`'s state at its log's last durable point. */
export async function queryExecution<A, R>(
  host: ExecutionQueryHost,
  query: QueryDefinition<string, A, R>,
  executionId: string,
  arg: A,
): Promise<R> {
  if (!isQueryDefinition(query)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'runtime.query takes a query made with defineQuery, then the execution id',
      { path: 'query' },
    );
  }
  let value: unknown = arg;
  if (query.arg !== undefined) {
    const checked = await validate(query.arg, arg);
    if (!checked.ok) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_QUERY,
        `the argument of query '${query.name}' is refused by its schema: ${checked.message}`,
        { query: query.name, executionId, issues: checked.issues },
      );
    }
    value = checked.value;
  }
  const state = await fullState(host.store, executionId);
  const flow = host.flow(state.flow, state.version);
  if (flow === undefined) {
    throw new LoomError(
      KernelErrorCode.FLOW_NOT_REGISTERED,
      `execution ${executionId} runs flow '${state.flow}'` +
        `${state.version === null ? '' : ` version ${state.version}`}, which is not registered ` +
        'here: a query replays the flow in the asking process, so register it there',
      { executionId, flow: state.flow, version: state.version },
    );
  }
  const replayed = await replayReadOnly(flow, state, host.clock);
  const handler = replayed.handlers.get(query.name);
  if (handler === undefined) {
    throw new LoomError(
      WorkflowErrorCode.QUERY_NOT_HANDLED,
      `execution ${executionId} (flow '${state.flow}') has no handler for query '${query.name}' ` +
        `at its last durable point (it registered ${[...replayed.handlers.keys()].join(', ') || 'none'}): ` +
        'register it with ctx.onQuery before the flow first waits',
      { query: query.name, executionId, registered: [...replayed.handlers.keys()] },
    );
  }
  let result: unknown;
  try {
    result = handler(value);
  } catch (error) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_QUERY,
      `the handler of query '${query.name}' threw: ${String((error as Error)?.message ?? error)}`,
      { query: query.name, executionId, reason: 'handler threw' },
      error,
    );
  }
  if (query.result === undefined) return result as R;
  const checked = await validate(query.result, result);
  if (!checked.ok) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_QUERY,
      `the result of query '${query.name}' is refused by its schema: ${checked.message}`,
      { query: query.name, executionId, issues: checked.issues },
    );
  }
  return checked.value as R;
}

/**
 * Sends `update` to `executionId` (validated first: nothing written on a refusal), idempotent by
 * its update id, and waits on the log for the flow's answer.
 */
export async function updateExecution<A, R>(
  host: ExecutionQueryHost,
  update: UpdateDefinition<string, A, R>,
  executionId: string,
  arg: A,
  options: UpdateOptions,
): Promise<R> {
  if (!isUpdateDefinition(update)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'runtime.update takes an update made with defineUpdate, then the execution id',
      { path: 'update' },
    );
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `runtime.update's options must be an object ({ updateId, timeout }), got ${
        options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options
      }`,
      { update: update.name, path: 'options' },
    );
  }
  const updateId = options.updateId ?? randomUUID();
  if (
    typeof updateId !== 'string' ||
    updateId.length === 0 ||
    updateId.length > updateIdLengthMax ||
    updateId.includes(String.fromCharCode(0))
  ) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `an updateId must be 1 to ${updateIdLengthMax} characters without NUL, got ${JSON.stringify(updateId)}`,
      { update: update.name, path: 'updateId' },
    );
  }
  // The deadline counts from the call: sending the update and reading the log come out of it.
  const deadline = deadlineOf(host, options.timeout);
  const value = await checkUpdate(update, executionId, arg);
  try {
    await host.signal(
      executionId,
      updateSignalName(update.name),
      { updateId, arg: (value ?? null) as JsonValue },
      { idempotencyKey: updateAnswerStep(updateId) },
    );
  } catch (error) {
    // A settled execution may have answered this update before it ended: its log says.
    if (!isLoomError(error, KernelErrorCode.EXECUTION_SETTLED)) throw error;
  }
  return (await awaitAnswer(host, update.name, executionId, updateId, deadline)) as R;
}

/** An update's deadline: its timeout, and when it ends on the host's clock. */
interface UpdateDeadline {
  timeoutMs: number;
  atMs: number;
}

function deadlineOf(
  host: ExecutionQueryHost,
  timeout: Duration | undefined,
): UpdateDeadline | undefined {
  if (timeout === undefined) return undefined;
  const timeoutMs = parseDuration(timeout, 'timeout');
  return { timeoutMs, atMs: host.clock.now() + timeoutMs };
}

/** The argument after the update's schema and validator; a refusal is INVALID_UPDATE. */
async function checkUpdate<A, R>(
  update: UpdateDefinition<string, A, R>,
  executionId: string,
  arg: A,
): Promise<unknown> {
  let value: unknown = arg;
  if (update.arg !== undefined) {
    const checked = await validate(update.arg, arg);
    if (!checked.ok) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_UPDATE,
        `update '${update.name}' refused by its schema: ${checked.message}; nothing was written`,
        { update: update.name, executionId, issues: checked.issues },
      );
    }
    value = checked.value;
  }
  if (update.validate === undefined) return value;
  let refusal: unknown;
  try {
    refusal = await update.validate(value as A);
  } catch (error) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_UPDATE,
      `update '${update.name}' refused by its validator: ${String((error as Error)?.message ?? error)}; nothing was written`,
      { update: update.name, executionId, reason: String((error as Error)?.message ?? error) },
      error,
    );
  }
  if (typeof refusal === 'string') {
    throw new LoomError(
      WorkflowErrorCode.INVALID_UPDATE,
      `update '${update.name}' refused by its validator: ${refusal}; nothing was written`,
      { update: update.name, executionId, reason: refusal },
    );
  }
  return value;
}

/** The whole log folded, results included (no snapshot: a replay needs every result). */
async function fullState(store: EventStore, executionId: string): Promise<ExecutionState> {
  const { state } = await loadState(store, undefined, executionId);
  if (state === undefined) {
    throw new LoomError(
      KernelErrorCode.EXECUTION_NOT_FOUND,
      `no execution ${executionId} in the log`,
      {
        executionId,
      },
    );
  }
  return state;
}

type Answer = { answered: true; result: JsonValue } | { answered: false; reason: string };

const terminalTypes = new Set([
  'execution.completed',
  'execution.failed',
  'execution.cancelled',
  'execution.continued_as_new',
]);

/** The answer to `step` one event carries, its refusal, or the execution's end without it. */
function answerIn(event: StoredEvent, step: string): Answer | undefined {
  if (terminalTypes.has(event.type)) {
    return { answered: false, reason: event.type.slice('execution.'.length) };
  }
  if (event.type !== 'step.completed' && event.type !== 'step.failed') return undefined;
  const payload = event.payload as { name?: unknown; result?: JsonValue } | null;
  if (payload?.name !== step) return undefined;
  return event.type === 'step.completed'
    ? { answered: true, result: payload.result ?? null }
    : { answered: false, reason: 'its answer could not be journaled (step.failed)' };
}

/** How often the timer that keeps a waiting caller's process alive ticks (it does nothing). */
const keepAliveMs = 60_000;

/**
 * The answer once the log has it (through the store's subscription), by the deadline's `atMs`
 * on the host's clock (its `timeoutMs` after the call began), else `UPDATE_TIMEOUT`.
 */
async function awaitAnswer(
  host: ExecutionQueryHost,
  update: string,
  executionId: string,
  updateId: string,
  deadline: UpdateDeadline | undefined,
): Promise<JsonValue> {
  const step = updateAnswerStep(updateId);
  const state = await fullState(host.store, executionId);
  const settle = (answer: Answer): JsonValue => {
    if (answer.answered) return answer.result;
    throw new LoomError(
      WorkflowErrorCode.UPDATE_NOT_ANSWERED,
      `execution ${executionId} ended (${answer.reason}) without answering update '${update}' (${updateId})`,
      { update, updateId, executionId, status: answer.reason },
    );
  };
  const recorded = state.steps.find((record) => record.kind === undefined && record.name === step);
  if (recorded?.status === 'completed') return recorded.result ?? null;
  if (recorded?.status === 'failed') {
    return settle({ answered: false, reason: 'its answer could not be journaled (step.failed)' });
  }
  if (state.status !== 'running') return settle({ answered: false, reason: state.status });
  return new Promise<JsonValue>((resolve, reject) => {
    let done = false;
    let subscription: Subscription | undefined;
    let cancelTimer: CancelTimer | undefined;
    // Someone waits for this answer: keep the process alive until it comes, as `result()` does.
    const release = host.clock.setRepeating(() => undefined, keepAliveMs, { keepAlive: true });
    const finish = (outcome: () => JsonValue) => {
      if (done) return;
      done = true;
      release();
      cancelTimer?.();
      void subscription?.close();
      try {
        resolve(outcome());
      } catch (error) {
        reject(error);
      }
    };
    subscription = host.store.subscribe(
      {
        executionId,
        fromSequence: state.nextSequence,
        onError: (error) =>
          finish(() => {
            throw error;
          }),
      },
      (events) => {
        for (const event of events) {
          const answer = answerIn(event, step);
          if (answer !== undefined) return finish(() => settle(answer));
        }
      },
    );
    // A batch delivered before `subscribe` returned may have finished already.
    if (done) void subscription.close();
    if (deadline === undefined || done) return;
    const { timeoutMs } = deadline;
    const timedOut = () =>
      finish(() => {
        throw new LoomError(
          WorkflowErrorCode.UPDATE_TIMEOUT,
          `no answer to update '${update}' (${updateId}) of execution ${executionId} within ` +
            `${timeoutMs} ms; it stays journaled: call update again with the same updateId to keep waiting`,
          { update, updateId, executionId, timeoutMs },
        );
      });
    // What is left of the deadline: the time the send and the read took is not added to the wait
    // (a timer armed here for the whole timeout ran that long past the deadline; on a test's
    // clock, moved past the deadline in between, it never fired). Already past: at once.
    const leftMs = deadline.atMs - host.clock.now();
    if (leftMs <= 0) return timedOut();
    cancelTimer = host.clock.setTimer(timedOut, leftMs, { keepAlive: true });
  });
}
