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
  /**
   * No place may run it: the flow's `placement.tags` are not all among this runtime's `tags`
   * (`start`, `resume`, `retry` on the wrong node: nothing written), or no effect handler here
   * and no remote carries every tag an effect's placement asks for (`fields.tags`,
   * `fields.effect`). Start it on a node that has the tags, or add a remote that does.
   */
  PLACEMENT_UNSATISFIED: 'PLACEMENT_UNSATISFIED',
  /**
   * `runtime.start` of a flow that declares `concurrency`, `throttle`, `singleton`
   * or `idempotency` (`fields.flow`): a per-key limit holds only for runs a queue admits. Nothing was written: `runtime.enqueue` it and `runtime.work`
   * the queue.
   */
  FLOW_CONTROL_NEEDS_QUEUE: 'FLOW_CONTROL_NEEDS_QUEUE',
  /**
   * A flow's `concurrency.key`, `throttle.key`, `singleton.key` or `idempotency.key` threw, or returned something other than a non-empty string, for
   * an input (`fields.flow`, `fields.actual`; the thrown error is the `cause`). Nothing was
   * enqueued.
   */
  INVALID_FLOW_KEY: 'INVALID_FLOW_KEY',
  /**
   * A placement names a remote the dispatcher does not know (`fields.remote`), or the remote
   * answered that it has no handler for the effect (`fields.effect`, HTTP 404): register it there.
   */
  REMOTE_UNKNOWN: 'REMOTE_UNKNOWN',
  /**
   * A remote effect could not be reached or did not answer in time (connection refused or reset,
   * the remote process died mid-call, `timeoutMs` passed; `fields.remote`, `fields.reason`).
   * The step's retry policy decides what follows; the next attempt carries the same idempotency key.
   */
  REMOTE_UNAVAILABLE: 'REMOTE_UNAVAILABLE',
  /**
   * A remote answered with something that is not the effect protocol (a non-JSON body, a status
   * or shape it does not define, a result over `PlacementLimits.responseBytesMax`;
   * `fields.status`, `fields.reason`): it is not a Loom effect server, or a proxy sits between.
   */
  REMOTE_BAD_RESPONSE: 'REMOTE_BAD_RESPONSE',
  /**
   * The remote effect handler threw (`fields.remote`, `fields.effect`, `fields.remoteName`,
   * `fields.remoteCode`, the remote message in the message). Retried per the step's policy; a
   * `terminalError()` thrown remotely comes back as `TERMINAL` instead and is never retried.
   */
  REMOTE_EFFECT_FAILED: 'REMOTE_EFFECT_FAILED',
  /**
   * `runtime.query`: the argument is refused by the query's `arg` schema, or the handler's result
   * by its `result` schema (`fields.query`, `fields.issues`), or the handler threw (the error is
   * the `cause`). Nothing was written.
   */
  INVALID_QUERY: 'INVALID_QUERY',
  /**
   * `runtime.query` of a query the execution's flow has not registered (with `ctx.onQuery`) by
   * the log's last durable point (`fields.query`, `fields.executionId`, `fields.registered`).
   */
  QUERY_NOT_HANDLED: 'QUERY_NOT_HANDLED',
  /**
   * `runtime.update`: the argument is refused by the update's `arg` schema or its `validate`
   * (`fields.update`, `fields.issues` or `fields.reason`): nothing was written. In the flow:
   * an answer its `result` schema refuses (unjournaled), or an update signal without an id.
   */
  INVALID_UPDATE: 'INVALID_UPDATE',
  /**
   * `runtime.update`: the execution settled without answering the update (`fields.update`,
   * `fields.updateId`, `fields.status`). Whether it took the update is in its log.
   */
  UPDATE_NOT_ANSWERED: 'UPDATE_NOT_ANSWERED',
  /**
   * `runtime.update`: no answer within the caller's `timeout` (`fields.updateId`,
   * `fields.timeoutMs`). The update stays journaled and will be handled: call `update` again
   * with the same `updateId` to keep waiting (nothing more is written).
   */
  UPDATE_TIMEOUT: 'UPDATE_TIMEOUT',
} as const;

/** One of the stable error codes in {@link WorkflowErrorCode}. */
export type WorkflowErrorCode = (typeof WorkflowErrorCode)[keyof typeof WorkflowErrorCode];
