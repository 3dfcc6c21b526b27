import type { JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import {
  type ChildCompletedPayload,
  type ChildStartedPayload,
  EventType,
  type ExecutionCancelledPayload,
  type ExecutionCompletedPayload,
  type ExecutionContinuedAsNewPayload,
  type ExecutionFailedPayload,
  type ExecutionRetriedPayload,
  type ExecutionStartedPayload,
  type RecordedError,
  type SignalReceivedPayload,
  type SignalWaitingPayload,
  type StepAttemptFailedPayload,
  type StepCompletedPayload,
  type StepFailedPayload,
  type StepStartedPayload,
  type TimerScheduledPayload,
  type ValueRecordedPayload,
} from './kernel-events.js';

/** What an operation of the flow was: a step, a timer, a signal wait, a recorded value, … */
export type OperationKind = 'step' | 'timer' | 'signal' | 'value' | 'patch' | 'child';

/** One operation (step, timer, signal wait, value, patch marker, child) as the log has it. */
export interface StepRecord {
  /** Omitted for plain steps. */
  kind?: OperationKind;
  name: string;
  status: 'started' | 'completed' | 'failed';
  /** Timers: when it fires. Signal waits: when they time out (null: never). */
  wakeAtMs?: number | null;
  /** Signal waits: the inbox signal consumed. */
  signalId?: number;
  /** Children: the child's execution id. */
  childId?: string;
  /** The result (completed steps). */
  result?: JsonValue;
  error?: RecordedError;
  /** Retried steps: attempts failed so far in the current budget (`step.attempt_failed`). */
  attempts?: number;
  /** Retried steps: when the next attempt may run. */
  retryAtMs?: number;
}

/**
 * An execution's state: the fold of its log. Plain JSON, so a snapshot is the state itself.
 * The kernel keeps it in memory while the execution is hot, so a step never re-reads the log.
 */
export interface ExecutionState {
  executionId: string;
  flow: string;
  version: string | null;
  input: JsonValue;
  status: 'running' | 'completed' | 'failed' | 'cancelled' | 'continued';
  steps: StepRecord[];
  /** Inbox signals already consumed by a wait (so each is delivered once). */
  consumedSignals: number[];
  parent?: { executionId: string; index: number };
  continuedFrom?: string;
  rootId: string;
  generation: number;
  successorId?: string;
  output?: JsonValue;
  error?: RecordedError;
  cancelReason?: string;
  /** The sequence the next event will have. */
  nextSequence: number;
}

/** The state right after `execution.started`. */
export function initialState(
  executionId: string,
  started: ExecutionStartedPayload,
): ExecutionState {
  const state: ExecutionState = {
    executionId,
    flow: started.flow,
    version: started.version,
    input: started.input,
    status: 'running',
    steps: [],
    consumedSignals: [],
    rootId: started.rootId ?? executionId,
    generation: started.generation ?? 0,
    nextSequence: 1,
  };
  if (started.parent !== undefined) state.parent = started.parent;
  if (started.continuedFrom !== undefined) state.continuedFrom = started.continuedFrom;
  return state;
}

function corrupt(state: ExecutionState | undefined, event: StoredEvent, why: string): never {
  // A log the kernel cannot fold is corruption, not an expected failure: stop, say where.
  throw new LoomError(
    ErrorCode.STORE_FAILURE,
    `cannot fold event ${event.sequence} (${event.type}) of execution ${event.executionId}: ${why}`,
    { executionId: event.executionId, sequence: event.sequence, status: state?.status ?? 'none' },
  );
}

/** Applies one event to the state (mutating it) and returns it. */
export function foldEvent(state: ExecutionState | undefined, event: StoredEvent): ExecutionState {
  if (state === undefined) {
    if (event.sequence !== 0 || event.type !== EventType.executionStarted) {
      corrupt(state, event, 'an execution must begin with execution.started at sequence 0');
    }
    return initialState(event.executionId, event.payload as unknown as ExecutionStartedPayload);
  }
  if (event.sequence !== state.nextSequence) {
    corrupt(state, event, `expected sequence ${state.nextSequence}`);
  }
  state.nextSequence = event.sequence + 1;
  switch (event.type) {
    case EventType.stepStarted: {
      const payload = event.payload as unknown as StepStartedPayload;
      state.steps[payload.index] = { name: payload.name, status: 'started' };
      break;
    }
    case EventType.stepCompleted: {
      const payload = event.payload as unknown as StepCompletedPayload;
      state.steps[payload.index] = {
        name: payload.name,
        status: 'completed',
        result: payload.result,
      };
      break;
    }
    case EventType.stepAttemptFailed: {
      const payload = event.payload as unknown as StepAttemptFailedPayload;
      state.steps[payload.index] = {
        name: payload.name,
        status: 'started',
        attempts: payload.attempt,
        retryAtMs: payload.retryAtMs,
      };
      break;
    }
    case EventType.stepFailed: {
      const payload = event.payload as unknown as StepFailedPayload;
      const record: StepRecord = { name: payload.name, status: 'failed', error: payload.error };
      if (payload.attempts !== undefined) record.attempts = payload.attempts;
      state.steps[payload.index] = record;
      break;
    }
    case EventType.executionRetried:
      reopen(state, event.payload as unknown as ExecutionRetriedPayload);
      break;
    case EventType.executionCompleted:
      state.status = 'completed';
      state.output = (event.payload as unknown as ExecutionCompletedPayload).output;
      break;
    case EventType.executionFailed:
      state.status = 'failed';
      state.error = (event.payload as unknown as ExecutionFailedPayload).error;
      break;
    case EventType.executionCancelled:
      state.status = 'cancelled';
      state.cancelReason = (event.payload as unknown as ExecutionCancelledPayload).reason;
      break;
    case EventType.executionContinuedAsNew:
      state.status = 'continued';
      state.successorId = (event.payload as unknown as ExecutionContinuedAsNewPayload).successorId;
      break;
    default:
      foldOperation(state, event);
      break;
  }
  return state;
}

/** Events of timers, signals, values, patches and children. */
function foldOperation(state: ExecutionState, event: StoredEvent): void {
  const payload = event.payload as unknown as { index: number; name: string };
  switch (event.type) {
    case EventType.timerScheduled:
      state.steps[payload.index] = {
        kind: 'timer',
        name: payload.name,
        status: 'started',
        wakeAtMs: (event.payload as unknown as TimerScheduledPayload).wakeAtMs,
      };
      break;
    case EventType.timerFired:
      markCompleted(state, payload.index, undefined);
      break;
    case EventType.signalWaiting:
      state.steps[payload.index] = {
        kind: 'signal',
        name: payload.name,
        status: 'started',
        wakeAtMs: (event.payload as unknown as SignalWaitingPayload).timeoutAtMs,
      };
      break;
    case EventType.signalReceived: {
      const received = event.payload as unknown as SignalReceivedPayload;
      markCompleted(state, received.index, received.payload);
      const record = state.steps[received.index];
      if (record !== undefined) record.signalId = received.signalId;
      state.consumedSignals.push(received.signalId);
      break;
    }
    case EventType.signalTimedOut:
      markCompleted(state, payload.index, undefined);
      break;
    case EventType.valueRecorded:
      state.steps[payload.index] = {
        kind: 'value',
        name: payload.name,
        status: 'completed',
        result: (event.payload as unknown as ValueRecordedPayload).value,
      };
      break;
    case EventType.patchMarked:
      state.steps[payload.index] = { kind: 'patch', name: payload.name, status: 'completed' };
      break;
    case EventType.childStarted:
      state.steps[payload.index] = {
        kind: 'child',
        name: payload.name,
        status: 'started',
        childId: (event.payload as unknown as ChildStartedPayload).childId,
      };
      break;
    case EventType.childCompleted: {
      const done = event.payload as unknown as ChildCompletedPayload;
      const record = state.steps[done.index];
      if (record !== undefined) {
        record.status = done.status === 'completed' ? 'completed' : 'failed';
        if (done.output !== undefined) record.result = done.output;
        if (done.error !== undefined) record.error = done.error;
      }
      break;
    }
    default:
      // execution.suspended and the event types of higher layers do not change kernel state.
      break;
  }
}

/**
 * `execution.retried`: the failed execution runs again; the step whose failure failed it gets a
 * fresh attempt budget (it is `started` again, with no attempt failed).
 */
export function reopen(state: ExecutionState, retried: ExecutionRetriedPayload): void {
  state.status = 'running';
  delete state.error;
  if (retried.stepIndex === null) return;
  const record = state.steps[retried.stepIndex];
  if (record?.status === 'failed' && (record.kind ?? 'step') === 'step') {
    state.steps[retried.stepIndex] = { name: record.name, status: 'started' };
  }
}

function markCompleted(state: ExecutionState, index: number, result: JsonValue | undefined): void {
  const record = state.steps[index];
  if (record === undefined) return;
  record.status = 'completed';
  if (result !== undefined) record.result = result;
}

/** True once the execution has its terminal event. */
export function isSettled(state: ExecutionState): boolean {
  return state.status !== 'running';
}
