import type { JsonValue } from '../../envelope.js';

/**
 * The event types the kernel writes. A flow of n plain steps writes exactly 2n + 2 of them; a
 * retried step adds one `step.attempt_failed` per failed attempt before its last and one
 * `step.attempt_started` per attempt after the first, and a resume that finds a step's attempt in
 * flight (after a crash or a takeover) one `step.interrupted`.
 */
export const EventType = {
  executionStarted: 'execution.started',
  stepStarted: 'step.started',
  stepAttemptFailed: 'step.attempt_failed',
  stepAttemptStarted: 'step.attempt_started',
  stepInterrupted: 'step.interrupted',
  stepCompleted: 'step.completed',
  stepFailed: 'step.failed',
  executionCompleted: 'execution.completed',
  executionFailed: 'execution.failed',
  executionCancelled: 'execution.cancelled',
  executionRetried: 'execution.retried',
  executionSuspended: 'execution.suspended',
  executionContinuedAsNew: 'execution.continued_as_new',
  timerScheduled: 'timer.scheduled',
  timerFired: 'timer.fired',
  signalWaiting: 'signal.waiting',
  signalReceived: 'signal.received',
  signalTimedOut: 'signal.timed_out',
  valueRecorded: 'value.recorded',
  patchMarked: 'patch.marked',
  childStarted: 'child.started',
  childCompleted: 'child.completed',
} as const;

export type KernelEventType = (typeof EventType)[keyof typeof EventType];

/** An error as the log records it: plain data, so a replay rethrows the same thing. */
export interface RecordedError {
  name: string;
  message: string;
  /** A LoomError's code, when the error had one. */
  code?: string;
  /** Structured fields of a LoomError, when JSON can hold them. */
  fields?: { [key: string]: JsonValue };
  /** The stack where it was thrown (bounded), when the thrown value had one. */
  stack?: string;
}

export interface ExecutionStartedPayload {
  flow: string;
  version: string | null;
  input: JsonValue;
  /** Set when a parent flow started this one with `ctx.child`. */
  parent?: { executionId: string; index: number };
  /** Set on a continue-as-new successor: its predecessor, the chain's first id, its generation. */
  continuedFrom?: string;
  rootId?: string;
  generation?: number;
  /**
   * Set on a lazy start (leased only after `lazyGraceMs`): the node that started it. The index
   * keeps it, so recovery can take a dead node's unleased starts at once.
   */
  node?: string;
}

/** `timer.scheduled`: a durable sleep until `wakeAtMs`. `timer.fired` carries only the index. */
export interface TimerScheduledPayload {
  index: number;
  name: string;
  wakeAtMs: number;
}

/** `signal.waiting`: the flow waits for a signal `name` (until `timeoutAtMs`, if set). */
export interface SignalWaitingPayload {
  index: number;
  name: string;
  timeoutAtMs: number | null;
}

/** `signal.received`: the wait at `index` consumed inbox signal `signalId`. */
export interface SignalReceivedPayload {
  index: number;
  name: string;
  signalId: number;
  payload: JsonValue;
}

/** `value.recorded`: a non-deterministic value (`now`, `random`, `uuid`) fixed for replay. */
export interface ValueRecordedPayload {
  index: number;
  name: string;
  value: JsonValue;
}

/** `child.started` / `child.completed`: a child execution and, later, its outcome. */
export interface ChildStartedPayload {
  index: number;
  name: string;
  childId: string;
}

export interface ChildCompletedPayload {
  index: number;
  childId: string;
  status: 'completed' | 'failed' | 'cancelled';
  output?: JsonValue;
  error?: RecordedError;
}

export interface ExecutionSuspendedPayload {
  wakeAtMs: number | null;
}

export interface ExecutionContinuedAsNewPayload {
  successorId: string;
}

export interface StepStartedPayload {
  index: number;
  name: string;
  /** The step was declared idempotent (`KernelStepOptions.idempotent`). */
  idempotent?: true;
  /** A `ctx.transaction` step: its effect and `step.completed` commit together. */
  transactional?: true;
}

export interface StepCompletedPayload {
  index: number;
  name: string;
  /** A record (`ctx.record`): no `step.started` precedes it (ADR 0066). */
  record?: true;
  result: JsonValue;
}

export interface StepFailedPayload {
  index: number;
  name: string;
  /** A record (`ctx.record`): no `step.started` precedes it (ADR 0066). */
  record?: true;
  error: RecordedError;
  /** Attempts made in the step's last budget (omitted when it was not retried: one). */
  attempts?: number;
}

/**
 * `step.attempt_failed`: attempt `attempt` of a retried step failed with `error`; the next
 * attempt runs at `retryAtMs` (a durable timer, like a sleep's).
 */
export interface StepAttemptFailedPayload {
  index: number;
  name: string;
  attempt: number;
  error: RecordedError;
  retryAtMs: number;
}

/**
 * `step.attempt_started`: attempt `attempt` of a step runs now: a retried step's backoff is over,
 * or `runtime.retry(id)` reopened it. Durable before the effect runs, like `step.started` before
 * the first attempt, so a resume that finds it last knows the attempt was in flight and counts
 * the interruption (ADR 0031).
 */
export interface StepAttemptStartedPayload {
  index: number;
  name: string;
  attempt: number;
}

/**
 * `step.interrupted`: a resume from the log found the step's attempt in flight (its process
 * died, or lost the execution, while the effect ran) and runs it again; this is the
 * `interruptions`-th time in a row. Past `stepInterruptionsMax` the step fails with
 * `STEP_POISONED` instead (ADR 0031).
 */
export interface StepInterruptedPayload {
  index: number;
  name: string;
  interruptions: number;
}

/**
 * `execution.retried`: `runtime.retry(id)` reopened a failed execution (the only event that may
 * follow a terminal one). The step at `stepIndex` (the one whose failure failed the execution,
 * if one did) runs again with a fresh attempt budget; completed steps replay.
 */
export interface ExecutionRetriedPayload {
  stepIndex: number | null;
  /** The sequence of the `execution.failed` event it reopens. */
  failedSequence: number;
  /** Who asked for the retry (an operator's name), when the caller said (absent in older logs). */
  by?: string;
  /** Why it was retried ("deployed the fix"), when the caller said (absent in older logs). */
  reason?: string;
}

/** Who asked for a retry and why: recorded in its `execution.retried` event. */
export interface RetryOptions {
  /** Who asked (an operator's name). */
  by?: string;
  /** Why ("deployed the fix for the timeout"). */
  reason?: string;
}

export interface ExecutionCompletedPayload {
  output: JsonValue;
}

export interface ExecutionFailedPayload {
  error: RecordedError;
}

export interface ExecutionCancelledPayload {
  reason: string;
}
