import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
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

const kernelCodes = new Set<string>(Object.values(ErrorCode));

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
      const { error } = outcome;
      const code =
        error.code !== undefined && kernelCodes.has(error.code)
          ? (error.code as ErrorCode)
          : ErrorCode.EXECUTION_FAILED;
      // The recorded fields go last: a STEP_FAILED keeps the step's own error in `fields.error`.
      throw new LoomError(code, `execution ${executionId} failed: ${error.message}`, {
        executionId,
        error,
        ...(error.fields ?? {}),
      });
    }
    case 'stopped':
      throw outcome.error;
  }
}
