import type { JsonValue } from '../../envelope.js';
import type { LoomError } from '../../errors.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import type { ExecutionState } from './execution-state.js';
import { EventType, type RecordedError } from './kernel-events.js';
import { recordError } from './recorded-error.js';

/**
 * The event an execution ends with, and the outcome it settles to. `payloadText`: the payload's
 * stored text, when it was encoded already (a completed execution's output).
 */
export type Terminal = {
  type: string;
  payload: JsonValue;
  payloadText?: string;
  outcome: ExecutionOutcome;
};

/** Why a flow that did not complete ends: continued as new, cancelled, or a broken rule. */
export interface Ending {
  continuedTo: string | undefined;
  cancelReason: string | undefined;
  /** A broken rule (non-determinism) that fails the execution even if the flow catches it. */
  fatal: LoomError | undefined;
}

/** The terminal of a flow that threw `thrown` (or was interrupted): continued, cancelled or failed. */
export function terminalFor(thrown: unknown, ending: Ending): Terminal {
  if (ending.continuedTo !== undefined) {
    const successorId = ending.continuedTo;
    return {
      type: EventType.executionContinuedAsNew,
      payload: { successorId },
      outcome: { status: 'continued', successorId },
    };
  }
  if (ending.cancelReason !== undefined) {
    const reason = ending.cancelReason;
    return {
      type: EventType.executionCancelled,
      payload: { reason },
      outcome: { status: 'cancelled', reason },
    };
  }
  const error: RecordedError = recordError(ending.fatal ?? thrown);
  return {
    type: EventType.executionFailed,
    payload: { error } as unknown as JsonValue,
    outcome: { status: 'failed', error },
  };
}

/** Changes the hot state as folding the terminal event would, `nextSequence` being past it. */
export function applyTerminal(
  state: ExecutionState,
  outcome: ExecutionOutcome,
  nextSequence: number,
): void {
  if (outcome.status === 'completed') {
    state.status = 'completed';
    state.output = outcome.output;
  } else if (outcome.status === 'failed') {
    state.status = 'failed';
    state.error = outcome.error;
  } else if (outcome.status === 'cancelled') {
    state.status = 'cancelled';
    state.cancelReason = outcome.reason;
  } else if (outcome.status === 'continued') {
    state.status = 'continued';
    state.successorId = outcome.successorId;
  }
  state.nextSequence = nextSequence;
}
