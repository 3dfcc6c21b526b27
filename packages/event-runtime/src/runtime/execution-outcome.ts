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

/** The outcome a settled state records. */
export function outcomeOfState(state: ExecutionState): ExecutionOutcome | undefined {
  switch (state.status) {
    case 'completed':
      return { status: 'completed', output: state.output ?? null };
    case 'failed':
      return { status: 'failed', error: state.error ?? { name: 'Error', message: 'unknown' } };
    case 'cancelled':
      return { status: 'cancelled', reason: state.cancelReason ?? '' };
    case 'continued':
      return { status: 'continued', successorId: state.successorId ?? '' };
    default:
      return undefined;
  }
}

/** What `handle.result()` gives for a settled outcome: the output, or a typed error. */
export function resultOf(executionId: string, outcome: ExecutionOutcome): unknown {
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
    default:
      // Suspended and continued executions have no result yet: the runtime follows them.
      throw new LoomError(ErrorCode.STORE_FAILURE, `execution ${executionId} has not settled`, {
        executionId,
        status: outcome.status,
      });
  }
}
