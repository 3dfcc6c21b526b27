import { isLoomError, LoomError, type LoomErrorFields } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same
 * class, not a copy): this package's errors are `LoomError`s with the codes below.
 */
export { isLoomError, LoomError };

/**
 * Stable error codes of `@loom/scheduler`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused; every
 * package's codes are listed in docs/errors.md.
 */
export const SchedulerErrorCode = {
  /** A task was dropped before it started because its `signal` aborted; `cause` is the abort reason. */
  SCHEDULE_ABORTED: 'SCHEDULE_ABORTED',
  /** `queueDepthMax` tasks were already waiting, so the scheduler refused one more. */
  SCHEDULER_QUEUE_FULL: 'SCHEDULER_QUEUE_FULL',
  /** An argument or option is invalid (not a function, a limit of 0, NaN, an unknown priority, …). */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
} as const;

/** One of the stable error codes in {@link SchedulerErrorCode}. */
export type SchedulerErrorCode = (typeof SchedulerErrorCode)[keyof typeof SchedulerErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface SchedulerErrorFields extends LoomErrorFields {
  /** The argument or option that was invalid (`task`, `limit`, `concurrencyMax`, …). */
  argument?: string;
  expected?: unknown;
  actual?: unknown;
  /** The named limit that was reached (`queueDepthMax`, `keyLengthMax`). */
  limit?: string;
  [key: string]: unknown;
}
