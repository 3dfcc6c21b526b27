import { isLoomError, LoomError } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same
 * class, not a copy): this package's errors are `LoomError`s with the codes below.
 */
export { isLoomError, LoomError };

/**
 * Stable error codes of `@loom/workflow-runtime`. Callers match on `code`, never on
 * `instanceof` (two installed copies of the package break `instanceof`). A code is never
 * reused. The kernel's codes (`@loom/event-runtime`) keep their own meaning; this list only
 * adds what the workflow layer throws.
 */
export const WorkflowErrorCode = {
  /** A cron expression does not parse; `fields.field` names the field, `fields.reason` says why. */
  INVALID_CRON: 'INVALID_CRON',
  /** A valid cron expression matches no time within `CronLimits.searchYearsMax` years: it never fires. */
  CRON_NEVER_FIRES: 'CRON_NEVER_FIRES',
  /** A time zone is not an IANA name this runtime's `Intl` knows. */
  INVALID_TIME_ZONE: 'INVALID_TIME_ZONE',
  /** An argument is out of its documented domain (an invalid date, a count past its limit, …). */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** A flow's input was refused by its schema (nothing was written). */
  INVALID_INPUT: 'INVALID_INPUT',
  /** A flow's output was refused by its schema (the execution failed). */
  INVALID_OUTPUT: 'INVALID_OUTPUT',
  /** A signal name the flow does not declare, or a payload its schema refuses. */
  INVALID_SIGNAL: 'INVALID_SIGNAL',
  /**
   * `schedule()` or `unschedule()` lost several rounds in a row to other processes changing the
   * same schedule (`fields.schedule`, `fields.operation`): call it again, and give every process
   * the same definition.
   */
  SCHEDULE_CONTENDED: 'SCHEDULE_CONTENDED',
  /** `enqueue` or `work` on a runtime created without a backend or `queues` store. */
  QUEUE_STORE_MISSING: 'QUEUE_STORE_MISSING',
} as const;

/** One of the stable error codes in {@link WorkflowErrorCode}. */
export type WorkflowErrorCode = (typeof WorkflowErrorCode)[keyof typeof WorkflowErrorCode];
