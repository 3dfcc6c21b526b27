import { ErrorCode, LoomError } from '../errors.js';

/** The `EXECUTION_NOT_FOUND` error for an id the log does not have. */
export function notFound(executionId: string): LoomError {
  return new LoomError(ErrorCode.EXECUTION_NOT_FOUND, `no execution ${executionId} in the log`, {
    executionId,
  });
}
