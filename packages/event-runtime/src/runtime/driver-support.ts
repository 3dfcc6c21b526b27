import type { JsonValue } from '../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import { encodePayload } from '../internal/json-codec.js';
import type { RecordedError } from './kernel-events.js';

/** A promise that never settles: what a flow awaits once its execution suspends or stops. */
export function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

/** The error `ctx.step` throws when an effect threw (identical on replay). */
export function stepFailed(
  executionId: string,
  index: number,
  name: string,
  error: RecordedError | undefined,
  cause?: unknown,
): LoomError {
  return new LoomError(
    ErrorCode.STEP_FAILED,
    `step ${index} ('${name}') of execution ${executionId} failed: ${error?.message ?? 'unknown error'}`,
    { executionId, step: name, stepIndex: index, error: (error ?? null) as never },
    cause,
  );
}

/** The error `ctx.child` throws when the child failed or was cancelled (identical on replay). */
export function childFailed(
  executionId: string,
  childId: string,
  status: string,
  error: RecordedError | undefined,
): LoomError {
  return new LoomError(
    ErrorCode.CHILD_FAILED,
    `child execution ${childId} of ${executionId} ${status === 'cancelled' ? 'was cancelled' : 'failed'}: ${error?.message ?? ''}`,
    { executionId, childId, status, error: (error ?? null) as never },
  );
}

/** Validates that a value can go in the log; returns it typed as JSON. Throws PAYLOAD_NOT_JSON. */
export function toJson(value: unknown, what: string, executionId: string): JsonValue {
  const json = value === undefined ? null : value;
  try {
    encodePayload(json, executionId);
  } catch (error) {
    if (isLoomError(error)) {
      throw new LoomError(
        error.code,
        `${what} cannot be stored: ${error.message}`,
        error.fields,
        error,
      );
    }
    throw error;
  }
  return json as JsonValue;
}
