import type { JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import {
  EventType,
  type ExecutionRetriedPayload,
  type ExecutionStartedPayload,
  type RecordedError,
} from './kernel-events.js';
import {
  checkChildStatus,
  checkError,
  checkIndex,
  checkNumber,
  checkNumberOrNull,
  checkPresent,
  checkStarted,
  checkString,
  payloadOf,
} from './kernel-payload.js';

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
  /**
   * Children: true when the child was cancelled rather than failed (`status` is `'failed'` for
   * both). The log's `child.completed` status says so; the recorded error's name never does.
   */
  cancelled?: true;
  /** The result (completed steps). */
  result?: JsonValue;
  error?: RecordedError;
  /** Retried steps: attempts failed so far in the current budget (`step.attempt_failed`). */
  attempts?: number;
  /** Retried steps: when the next attempt may run. */
  retryAtMs?: number;
  /** Steps resumed with an attempt in flight: how many times in a row (`step.interrupted`). */
  interruptions?: number;
  /** A failed step that `execution.retried` reopened: its next attempt is not an interrupted one. */
  reopened?: true;
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

function corrupt(event: StoredEvent, why: string): never {
  // A log the kernel cannot fold is corruption, not an expected failure: stop, say where.
  throw new LoomError(
    ErrorCode.LOG_CORRUPT,
    `cannot fold event ${event.sequence} (${event.type}) of execution ${event.executionId}: ` +
      `${why}. The log was changed outside Loom or by a broken writer`,
    { executionId: event.executionId, sequence: event.sequence, type: event.type },
  );
}

/**
 * Applies one event to the state (mutating it) and returns it. Every payload is checked against
 * the shape its type requires.
 *
 * Throws `LOG_CORRUPT` (naming execution, sequence and field) for an event out of order or of
 * the wrong shape.
 */
export function foldEvent(state: ExecutionState | undefined, event: StoredEvent): ExecutionState {
  if (state === undefined) {
    if (event.sequence !== 0 || event.type !== EventType.executionStarted) {
      corrupt(event, 'an execution must begin with execution.started at sequence 0');
    }
    return initialState(event.executionId, checkStarted(event));
  }
  if (event.sequence !== state.nextSequence) {
    corrupt(event, `expected sequence ${state.nextSequence}`);
  }
  switch (event.type) {
    case EventType.stepStarted: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        name: checkString(event, p.name, 'name'),
        status: 'started',
      };
      break;
    }
    case EventType.stepCompleted: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        name: checkString(event, p.name, 'name'),
        status: 'completed',
        result: checkPresent(event, p.result, 'result'),
      };
      break;
    }
    case EventType.stepAttemptFailed: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        name: checkString(event, p.name, 'name'),
        status: 'started',
        attempts: checkNumber(event, p.attempt, 'attempt'),
        retryAtMs: checkNumber(event, p.retryAtMs, 'retryAtMs'),
      };
      checkError(event, p.error, 'error');
      break;
    }
    case EventType.stepAttemptStarted: {
      const p = payloadOf(event);
      const index = checkIndex(event, p.index);
      checkNumber(event, p.attempt, 'attempt');
      // The attempt is in flight: no backoff pending, no longer just reopened.
      const { retryAtMs: _due, reopened: _reopened, ...rest } = state.steps[index] ?? {};
      state.steps[index] = { ...rest, name: checkString(event, p.name, 'name'), status: 'started' };
      break;
    }
    case EventType.stepInterrupted: {
      const p = payloadOf(event);
      const index = checkIndex(event, p.index);
      state.steps[index] = {
        ...state.steps[index],
        name: checkString(event, p.name, 'name'),
        status: 'started',
        interruptions: checkNumber(event, p.interruptions, 'interruptions'),
      };
      break;
    }
    case EventType.stepFailed: {
      const p = payloadOf(event);
      const record: StepRecord = {
        name: checkString(event, p.name, 'name'),
        status: 'failed',
        error: checkError(event, p.error, 'error'),
      };
      if (p.attempts !== undefined) record.attempts = checkNumber(event, p.attempts, 'attempts');
      state.steps[checkIndex(event, p.index)] = record;
      break;
    }
    case EventType.executionRetried: {
      const p = payloadOf(event);
      reopen(state, {
        stepIndex: checkNumberOrNull(event, p.stepIndex, 'stepIndex'),
        failedSequence: checkNumber(event, p.failedSequence, 'failedSequence'),
      });
      break;
    }
    case EventType.executionCompleted:
      state.output = checkPresent(event, payloadOf(event).output, 'output');
      state.status = 'completed';
      break;
    case EventType.executionFailed:
      state.error = checkError(event, payloadOf(event).error, 'error');
      state.status = 'failed';
      break;
    case EventType.executionCancelled:
      state.cancelReason = checkString(event, payloadOf(event).reason, 'reason');
      state.status = 'cancelled';
      break;
    case EventType.executionContinuedAsNew:
      state.successorId = checkString(event, payloadOf(event).successorId, 'successorId');
      state.status = 'continued';
      break;
    default:
      foldOperation(state, event);
      break;
  }
  state.nextSequence = event.sequence + 1;
  return state;
}

/** Events of timers, signals, values, patches and children. */
function foldOperation(state: ExecutionState, event: StoredEvent): void {
  switch (event.type) {
    case EventType.timerScheduled: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        kind: 'timer',
        name: checkString(event, p.name, 'name'),
        status: 'started',
        wakeAtMs: checkNumber(event, p.wakeAtMs, 'wakeAtMs'),
      };
      break;
    }
    case EventType.timerFired:
    case EventType.signalTimedOut:
      markCompleted(state, checkIndex(event, payloadOf(event).index), undefined);
      break;
    case EventType.signalWaiting: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        kind: 'signal',
        name: checkString(event, p.name, 'name'),
        status: 'started',
        wakeAtMs: checkNumberOrNull(event, p.timeoutAtMs, 'timeoutAtMs'),
      };
      break;
    }
    case EventType.signalReceived: {
      const p = payloadOf(event);
      const index = checkIndex(event, p.index);
      const signalId = checkNumber(event, p.signalId, 'signalId');
      markCompleted(state, index, checkPresent(event, p.payload, 'payload'));
      const record = state.steps[index];
      if (record !== undefined) record.signalId = signalId;
      state.consumedSignals.push(signalId);
      break;
    }
    case EventType.valueRecorded: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        kind: 'value',
        name: checkString(event, p.name, 'name'),
        status: 'completed',
        result: checkPresent(event, p.value, 'value'),
      };
      break;
    }
    case EventType.patchMarked: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        kind: 'patch',
        name: checkString(event, p.name, 'name'),
        status: 'completed',
      };
      break;
    }
    case EventType.childStarted: {
      const p = payloadOf(event);
      state.steps[checkIndex(event, p.index)] = {
        kind: 'child',
        name: checkString(event, p.name, 'name'),
        status: 'started',
        childId: checkString(event, p.childId, 'childId'),
      };
      break;
    }
    case EventType.childCompleted:
      foldChildCompleted(state, event);
      break;
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
    state.steps[retried.stepIndex] = { name: record.name, status: 'started', reopened: true };
  }
}

function foldChildCompleted(state: ExecutionState, event: StoredEvent): void {
  const p = payloadOf(event);
  const index = checkIndex(event, p.index);
  checkString(event, p.childId, 'childId');
  const status = checkChildStatus(event, p.status);
  const output = p.output as JsonValue | undefined;
  // A failed or cancelled child carries why; a completed one may carry nothing else.
  const error =
    status === 'completed' && p.error === undefined
      ? undefined
      : checkError(event, p.error, 'error');
  const record = state.steps[index];
  if (record === undefined) return;
  record.status = status === 'completed' ? 'completed' : 'failed';
  if (status === 'cancelled') record.cancelled = true;
  if (output !== undefined) record.result = output;
  if (error !== undefined) record.error = error;
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
