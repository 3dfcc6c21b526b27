// The names a flow gives its operations and the flow itself: 1 to 200 characters of well-formed
// text (no lone surrogate, no NUL), since they are keys of the registry and columns of the log.
import { ErrorCode, LoomError } from '../../errors.js';
import { checkWellFormed } from '../../internal/well-formed-text.js';

/** The longest flow or step name, in UTF-16 code units. */
export const nameLengthMax = 200;

/** Checks a step name (1 to 200 characters, no lone surrogate, no NUL); throws `INVALID_STEP_NAME`. */
export function checkStepName(name: unknown, executionId: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > nameLengthMax) {
    throw new LoomError(
      ErrorCode.INVALID_STEP_NAME,
      `a step name must be a string of 1 to ${nameLengthMax} characters, got ${typeof name === 'string' ? JSON.stringify(name.slice(0, 40)) : typeof name}`,
      { executionId },
    );
  }
  return checkWellFormed(name, 'name', ErrorCode.INVALID_STEP_NAME, { executionId });
}
