import type { JsonValue } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import type { ExecutionState } from './execution-state.js';
import type { RecordedError } from './kernel-events.js';

/** How a driver's run ended. `stopped`: this node stopped driving; the log holds the truth. */
export type ExecutionOutcome =
  | { status: 'completed'; output: JsonValue }
  | { status: 'failed'; error: RecordedError }
  | { status: 'cancelled'; reason: string }
  | { status: 'stopped'; error: LoomError }
  | { status: 'suspended'; wakeAtMs: number | null }
  | { status: 'continued'; successorId: string };

/** What `childOutcome` returns for a child with no log: recorded by its parent, never started. */
export const childMissing: unique symbol = Symbol('child missing');

/**
 * A child lookup's answer: the child's outcome if it settled, undefined while it runs, and
 * `childMissing` when it has no log.
 */
export type ChildLookup = ExecutionOutcome | undefined | typeof childMissing;

/**
 * The fields of the `EXECUTION_FAILED` error `result()` rejects with: where the execution failed
 * and the error that failed it, as the log recorded it.
 */
export interface ExecutionFailedFields {
  executionId: string;
  /** The step whose failure failed the execution; null when the flow itself threw. */
  step: string | null;
  stepIndex: number | null;
  /** Attempts that step made in its last budget; null when no step failed it. */
  attempts: number | null;
  /**
   * The root error: the failed step's last attempt (name, message, code, fields, stack), or what
   * the flow threw (a `NON_DETERMINISM`, an `INVALID_OUTPUT`, the flow's own error, …).
   */
  error: RecordedError;
  /** What the flow threw, when it differs from `error` (the `STEP_FAILED` wrapping a step's error). */
  thrown?: RecordedError;
}

/** The step and root error a recorded execution failure names (unwrapping a `STEP_FAILED`). */
export function failureFields(executionId: string, recorded: RecordedError): ExecutionFailedFields {
  const fields = recorded.fields;
  const stepError = fields?.error;
  if (
    recorded.code === ErrorCode.STEP_FAILED &&
    typeof fields?.step === 'string' &&
    typeof stepError === 'object' &&
    stepError !== null &&
    !Array.isArray(stepError)
  ) {
    return {
      executionId,
      step: fields.step,
      stepIndex: typeof fields.stepIndex === 'number' ? fields.stepIndex : null,
      attempts: typeof fields.attempts === 'number' ? fields.attempts : 1,
      error: stepError as unknown as RecordedError,
      thrown: recorded,
    };
  }
  return { executionId, step: null, stepIndex: null, attempts: null, error: recorded };
}

/** An outcome the log records: the execution has its terminal event. */
export type SettledOutcome = Extract<
  ExecutionOutcome,
  { status: 'completed' | 'failed' | 'cancelled' | 'continued' }
>;

/**
 * The outcome a settled state records (undefined while it runs). A settled state always has
 * its terminal's facts (the fold checks them); one without them (a snapshot written by
 * something else) is `LOG_CORRUPT`, never filled in with a made-up reason.
 */
export function outcomeOfState(state: ExecutionState): SettledOutcome | undefined {
  switch (state.status) {
    case 'completed':
      return { status: 'completed', output: state.output ?? null };
    case 'failed':
      return { status: 'failed', error: state.error ?? missing(state, 'error') };
    case 'cancelled':
      return { status: 'cancelled', reason: state.cancelReason ?? missing(state, 'reason') };
    case 'continued':
      return {
        status: 'continued',
        successorId: state.successorId ?? missing(state, 'successorId'),
      };
    default:
      return undefined;
  }
}

function missing(state: ExecutionState, field: string): never {
  const sequence = state.nextSequence - 1;
  throw new LoomError(
    ErrorCode.LOG_CORRUPT,
    `execution ${state.executionId} is ${state.status} but its state has no ${field} (terminal ` +
      `event ${sequence}): the log or its snapshot was changed outside Loom`,
    { executionId: state.executionId, sequence, path: `payload.${field}` },
  );
}

/**
 * An outcome `result()` can answer: settled, or this node stopped. Suspended and continued ones
 * have no result yet (the handle follows them), so they are not accepted here at all, rather
 * than turned into an error code.
 */
export type FinalOutcome = Exclude<ExecutionOutcome, { status: 'suspended' | 'continued' }>;

/** What `handle.result()` gives for a final outcome: the output, or a typed error. */
export function resultOf(executionId: string, outcome: FinalOutcome): unknown {
  switch (outcome.status) {
    case 'completed':
      return outcome.output;
    case 'cancelled':
      throw new LoomError(
        ErrorCode.EXECUTION_CANCELLED,
        `execution ${executionId} was cancelled: ${outcome.reason}`,
        { executionId, reason: outcome.reason },
      );
    case 'failed': {
      const failure = failureFields(executionId, outcome.error);
      const where =
        failure.step === null
          ? ''
          : ` in step '${failure.step}'${failure.attempts !== null && failure.attempts > 1 ? ` after ${failure.attempts} attempts` : ''}`;
      const code = failure.error.code === undefined ? '' : ` (${failure.error.code})`;
      // The recorded error's own fields stay readable at the top (NON_DETERMINISM's expected and
      // actual); the named ones go last so they always mean what ExecutionFailedFields says.
      throw new LoomError(
        ErrorCode.EXECUTION_FAILED,
        `execution ${executionId} failed${where}: ${failure.error.message}${code}. ` +
          'fields.error holds the recorded error; fix the cause and call retry(executionId) to ' +
          'run it again from there',
        { ...(outcome.error.fields ?? {}), ...failure },
      );
    }
    case 'stopped':
      throw outcome.error;
  }
}
