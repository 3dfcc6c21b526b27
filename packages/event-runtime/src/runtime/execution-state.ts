import type { JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import {
  EventType,
  type ExecutionCancelledPayload,
  type ExecutionCompletedPayload,
  type ExecutionFailedPayload,
  type ExecutionStartedPayload,
  type RecordedError,
  type StepCompletedPayload,
  type StepFailedPayload,
  type StepStartedPayload,
} from './kernel-events.js';

/** One step as the log has it so far. */
export interface StepRecord {
  name: string;
  status: 'started' | 'completed' | 'failed';
  /** The result (completed steps). */
  result?: JsonValue;
  error?: RecordedError;
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
  status: 'running' | 'completed' | 'failed' | 'cancelled';
  steps: StepRecord[];
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
  return {
    executionId,
    flow: started.flow,
    version: started.version,
    input: started.input,
    status: 'running',
    steps: [],
    nextSequence: 1,
  };
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
    case EventType.stepFailed: {
      const payload = event.payload as unknown as StepFailedPayload;
      state.steps[payload.index] = { name: payload.name, status: 'failed', error: payload.error };
      break;
    }
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
    default:
      // Event types of higher layers (timers, signals, agent steps) do not change kernel state.
      break;
  }
  return state;
}

/** True once the execution has its terminal event. */
export function isSettled(state: ExecutionState): boolean {
  return state.status !== 'running';
}
