import {
  isLoomError as isKernelLoomError,
  LoomError as KernelLoomError,
} from '@loom/event-runtime';

/**
 * Stable error codes of `@loom/scheduler`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused.
 *
 * The scheduler does not import the kernel, so it carries its own `LoomError` of the same
 * shape (`name`, `code`, `fields`, `cause`): `isLoomError` from `@loom/event-runtime`
 * recognises these errors too.
 */
export const ErrorCode = {
  /** A task was dropped before it started because its `signal` aborted; `cause` is the abort reason. */
  SCHEDULE_ABORTED: 'SCHEDULE_ABORTED',
  /** `queueDepthMax` tasks were already waiting, so the scheduler refused one more. */
  SCHEDULER_QUEUE_FULL: 'SCHEDULER_QUEUE_FULL',
  /** An argument or option is invalid (not a function, a limit of 0, NaN, an unknown priority, …). */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
} as const;

/** One of the stable error codes in {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface LoomErrorFields {
  /** The argument or option that was invalid (`task`, `limit`, `concurrencyMax`, …). */
  argument?: string;
  expected?: unknown;
  actual?: unknown;
  /** The named limit that was reached (`queueDepthMax`, `keyLengthMax`). */
  limit?: string;
  [key: string]: unknown;
}

/**
 * The one error type of Loom: the kernel's class with this package's codes. `code` is stable
 * and documented; `fields` carry the facts; `cause` the underlying error, if any.
 */
export class LoomError extends KernelLoomError<ErrorCode> {
  constructor(code: ErrorCode, message: string, fields: LoomErrorFields = {}, cause?: unknown) {
    super(code, message, fields, cause);
  }
}

/** True when `error` is a {@link LoomError} with the given code (works across package copies). */
export function isLoomError(error: unknown, code?: ErrorCode): error is LoomError {
  return isKernelLoomError(error, code);
}
