import type { JsonValue, StoredEvent } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import {
  EventType,
  type ExecutionRetriedPayload,
  type ExecutionStartedPayload,
  type RecordedError,
} from './kernel-events.js';
import { checkPayload } from './kernel-payload.js';

// Each type's check bound once, to a module constant: a call through a constant is inlined into
// the fold, a call through the table's object is not (2× the fold's time, execution-state.bench).
const {
  'child.completed': checkChildCompleted,
  'child.started': checkChildStarted,
  'execution.cancelled': checkExecutionCancelled,
  'execution.completed': checkExecutionCompleted,
  'execution.continued_as_new': checkExecutionContinuedAsNew,
  'execution.failed': checkExecutionFailed,
  'execution.retried': checkExecutionRetried,
  'execution.started': checkExecutionStarted,
  'patch.marked': checkPatchMarked,
  'signal.received': checkSignalReceived,
  'signal.timed_out': checkSignalTimedOut,
  'signal.waiting': checkSignalWaiting,
  'step.attempt_failed': checkStepAttemptFailed,
  'step.attempt_started': checkStepAttemptStarted,
  'step.completed': checkStepCompleted,
  'step.failed': checkStepFailed,
  'step.interrupted': checkStepInterrupted,
  'step.started': checkStepStarted,
  'timer.fired': checkTimerFired,
  'timer.scheduled': checkTimerScheduled,
  'value.recorded': checkValueRecorded,
} = checkPayload;

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
 * Applies one event to the state (mutating it) and returns it. Every payload the fold reads is
 * checked against the shape its type has in `payloadShapes` before any of it is used.
 *
 * Throws `LOG_CORRUPT` (naming execution, sequence and field) for an event out of order or of
 * the wrong shape.
 */
export function foldEvent(state: ExecutionState | undefined, event: StoredEvent): ExecutionState {
  if (state === undefined) {
    if (event.sequence !== 0 || event.type !== EventType.executionStarted) {
      corrupt(event, 'an execution must begin with execution.started at sequence 0');
    }
    return initialState(event.executionId, started(event));
  }
  if (event.sequence !== state.nextSequence) {
    corrupt(event, `expected sequence ${state.nextSequence}`);
  }
  switch (event.type) {
    case EventType.stepStarted: {
      const p = checkStepStarted(event);
      state.steps[p.index] = { name: p.name, status: 'started' };
      break;
    }
    case EventType.stepCompleted: {
      const p = checkStepCompleted(event);
      state.steps[p.index] = { name: p.name, status: 'completed', result: p.result };
      break;
    }
    case EventType.stepAttemptFailed: {
      const p = checkStepAttemptFailed(event);
      state.steps[p.index] = {
        name: p.name,
        status: 'started',
        attempts: p.attempt,
        retryAtMs: p.retryAtMs,
      };
      break;
    }
    case EventType.stepAttemptStarted: {
      const p = checkStepAttemptStarted(event);
      // The attempt is in flight: no backoff pending, no longer just reopened.
      const { retryAtMs: _due, reopened: _reopened, ...rest } = state.steps[p.index] ?? {};
      state.steps[p.index] = { ...rest, name: p.name, status: 'started' };
      break;
    }
    case EventType.stepInterrupted: {
      const p = checkStepInterrupted(event);
      state.steps[p.index] = {
        ...state.steps[p.index],
        name: p.name,
        status: 'started',
        interruptions: p.interruptions,
      };
      break;
    }
    case EventType.stepFailed: {
      const p = checkStepFailed(event);
      const record: StepRecord = { name: p.name, status: 'failed', error: p.error };
      if (p.attempts !== undefined) record.attempts = p.attempts;
      state.steps[p.index] = record;
      break;
    }
    case EventType.executionRetried: {
      const p = checkExecutionRetried(event);
      reopen(state, { stepIndex: p.stepIndex, failedSequence: p.failedSequence });
      break;
    }
    case EventType.executionCompleted:
      state.output = checkExecutionCompleted(event).output;
      state.status = 'completed';
      break;
    case EventType.executionFailed:
      state.error = checkExecutionFailed(event).error;
      state.status = 'failed';
      break;
    case EventType.executionCancelled:
      state.cancelReason = checkExecutionCancelled(event).reason;
      state.status = 'cancelled';
      break;
    case EventType.executionContinuedAsNew:
      state.successorId = checkExecutionContinuedAsNew(event).successorId;
      state.status = 'continued';
      break;
    default:
      foldOperation(state, event);
      break;
  }
  state.nextSequence = event.sequence + 1;
  return state;
}

/**
 * `execution.started`'s payload, checked, with only the fields the kernel knows (the parent link
 * copied), so a snapshot of the state never carries what a writer added beside them.
 */
function started(event: StoredEvent): ExecutionStartedPayload {
  const p = checkExecutionStarted(event);
  const payload: ExecutionStartedPayload = { flow: p.flow, version: p.version, input: p.input };
  if (p.parent !== undefined) {
    payload.parent = { executionId: p.parent.executionId, index: p.parent.index };
  }
  if (p.continuedFrom !== undefined) payload.continuedFrom = p.continuedFrom;
  if (p.rootId !== undefined) payload.rootId = p.rootId;
  if (p.generation !== undefined) payload.generation = p.generation;
  return payload;
}

/** Events of timers, signals, values, patches and children. */
function foldOperation(state: ExecutionState, event: StoredEvent): void {
  switch (event.type) {
    case EventType.timerScheduled: {
      const p = checkTimerScheduled(event);
      state.steps[p.index] = {
        kind: 'timer',
        name: p.name,
        status: 'started',
        wakeAtMs: p.wakeAtMs,
      };
      break;
    }
    case EventType.timerFired:
      markCompleted(state, checkTimerFired(event).index, undefined);
      break;
    case EventType.signalTimedOut:
      markCompleted(state, checkSignalTimedOut(event).index, undefined);
      break;
    case EventType.signalWaiting: {
      const p = checkSignalWaiting(event);
      state.steps[p.index] = {
        kind: 'signal',
        name: p.name,
        status: 'started',
        wakeAtMs: p.timeoutAtMs,
      };
      break;
    }
    case EventType.signalReceived: {
      const p = checkSignalReceived(event);
      markCompleted(state, p.index, p.payload);
      const record = state.steps[p.index];
      if (record !== undefined) record.signalId = p.signalId;
      state.consumedSignals.push(p.signalId);
      break;
    }
    case EventType.valueRecorded: {
      const p = checkValueRecorded(event);
      state.steps[p.index] = { kind: 'value', name: p.name, status: 'completed', result: p.value };
      break;
    }
    case EventType.patchMarked: {
      const p = checkPatchMarked(event);
      state.steps[p.index] = { kind: 'patch', name: p.name, status: 'completed' };
      break;
    }
    case EventType.childStarted: {
      const p = checkChildStarted(event);
      state.steps[p.index] = {
        kind: 'child',
        name: p.name,
        status: 'started',
        childId: p.childId,
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
  const p = checkChildCompleted(event);
  const record = state.steps[p.index];
  if (record === undefined) return;
  record.status = p.status === 'completed' ? 'completed' : 'failed';
  if (p.status === 'cancelled') record.cancelled = true;
  if (p.output !== undefined) record.result = p.output;
  if (p.error !== undefined) record.error = p.error;
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
