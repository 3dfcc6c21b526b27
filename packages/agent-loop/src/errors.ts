import { isLoomError, LoomError } from '@loom/event-runtime';

/**
 * Stable error codes of `@loom/agent-loop`. Callers match on `code`, never on `instanceof`.
 * A code is never reused. The kernel's and the workflow layer's codes keep their meaning.
 */
export const AgentErrorCode = {
  /** A bad argument: a tool or agent definition out of its documented domain, a bad option. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** No run with this id (`fields.runId`), or it is not an agent run. */
  RUN_NOT_FOUND: 'RUN_NOT_FOUND',
  /** No approval with this id (`fields.approvalId`) in its run's log. */
  APPROVAL_NOT_FOUND: 'APPROVAL_NOT_FOUND',
  /**
   * The approval was already decided (or expired); `fields.status` says how. Also when its run
   * has ended undecided (cancelled, failed, completed): `fields.runStatus` says how the run ended.
   */
  APPROVAL_NOT_PENDING: 'APPROVAL_NOT_PENDING',
  /**
   * A decision at or after the approval's expiry (`fields.expiresAtMs`, `fields.decidedAtMs`,
   * `fields.status: 'expired'`), before the run recorded the expiry itself (a run that did says
   * `APPROVAL_NOT_PENDING` with `status: 'expired'`). Nothing was sent; the run ends
   * `approval_expired` (or asks again, with `onExpire: 're-ask'`) when it resumes.
   */
  APPROVAL_EXPIRED: 'APPROVAL_EXPIRED',
  /**
   * The caller approved a request whose hash (`fields.expected`) is not the hash of the request
   * now pending (`fields.actual`): what the operator looked at has changed. Look again.
   */
  APPROVAL_REQUEST_CHANGED: 'APPROVAL_REQUEST_CHANGED',
  /** A resolution that does not fit the approval's kind (`record` on a `tool_call` approval). */
  INVALID_RESOLUTION: 'INVALID_RESOLUTION',
  /**
   * An `interrupted_side_effect` approval approved without a resolution (`fields.approvalId`): a
   * call whose outcome is unknown is resolved explicitly, `{ kind: 'rerun' }` to call it again or
   * `{ kind: 'record', output }` to record what it did (`loom approve --rerun | --record`).
   */
  RESOLUTION_REQUIRED: 'RESOLUTION_REQUIRED',
  /** No question with this id (`fields.questionId`) in its run's log. */
  QUESTION_NOT_FOUND: 'QUESTION_NOT_FOUND',
  /** The question was already answered, or its run has ended (`fields.runStatus`). */
  QUESTION_NOT_PENDING: 'QUESTION_NOT_PENDING',
  /** The run's agent is not registered with this agent runtime (`fields.agent`). */
  AGENT_NOT_REGISTERED: 'AGENT_NOT_REGISTERED',
  /**
   * A followed run ended without an agent result (its flow failed: a prompt function or a bug
   * threw); `fields.runId`, `fields.eventType`. Read its log with the flow runtime.
   */
  RUN_FAILED: 'RUN_FAILED',
  /**
   * An isolated tool's child process died before it answered: it exited, was killed by a signal
   * (`fields.signal`) or threw where nothing caught it; `fields.tool`, `fields.pid`,
   * `fields.exitCode`. A run sees it as a `tool_error` observation, never as its own failure.
   */
  TOOL_ISOLATE_CRASHED: 'TOOL_ISOLATE_CRASHED',
  /**
   * An isolated tool's module could not be loaded in its child process, or exports no `run`
   * function (`fields.tool`, `fields.module`). A `tool_error` observation.
   */
  TOOL_ISOLATE_MODULE_INVALID: 'TOOL_ISOLATE_MODULE_INVALID',
  /**
   * A message sent to a thread of a `busy: 'reject'` agent while a turn runs (`fields.threadId`,
   * `fields.runId`: the turn that runs; `fields.text`: the message, returned untouched). Nothing
   * was recorded: send it again once the turn has ended.
   */
  THREAD_BUSY: 'THREAD_BUSY',
  /** The thread has taken `threadMessagesMax` messages (`fields.threadId`); start a new thread. */
  THREAD_FULL: 'THREAD_FULL',
} as const;

/** One of the stable error codes in {@link AgentErrorCode}. */
export type AgentErrorCode = (typeof AgentErrorCode)[keyof typeof AgentErrorCode];

/** Structured facts an error carries (the kernel's shape). */
export type { LoomErrorFields } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same class,
 * not a copy): this package's errors are `LoomError`s with the codes above.
 */
export { isLoomError, LoomError };
