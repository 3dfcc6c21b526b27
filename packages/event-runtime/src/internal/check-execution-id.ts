import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import { checkWellFormed } from './well-formed-text.js';

/**
 * Validates an execution id (shared by every call that takes one). Throws `INVALID_ENVELOPE`
 * (not a non-empty string, a lone surrogate or NUL) or `LIMIT_EXCEEDED` (too long).
 */
export function checkExecutionId(executionId: unknown): string {
  if (typeof executionId !== 'string' || executionId.length === 0) {
    throw new LoomError(
      ErrorCode.INVALID_ENVELOPE,
      `executionId must be a non-empty string, got ${describe(executionId)}`,
    );
  }
  if (executionId.length > Limits.executionIdLengthMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `executionId is ${executionId.length} characters, over executionIdLengthMax ` +
        `(${Limits.executionIdLengthMax})`,
      { limit: 'executionIdLengthMax', actual: executionId.length },
    );
  }
  return checkWellFormed(executionId, 'executionId', ErrorCode.INVALID_ENVELOPE);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  return typeof value;
}
