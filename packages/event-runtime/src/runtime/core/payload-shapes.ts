import type {
  ChildCompletedPayload,
  ChildStartedPayload,
  ExecutionCancelledPayload,
  ExecutionCompletedPayload,
  ExecutionContinuedAsNewPayload,
  ExecutionFailedPayload,
  ExecutionRetriedPayload,
  ExecutionStartedPayload,
  ExecutionSuspendedPayload,
  KernelEventType,
  SignalReceivedPayload,
  SignalWaitingPayload,
  StepAttemptFailedPayload,
  StepAttemptStartedPayload,
  StepCompletedPayload,
  StepFailedPayload,
  StepInterruptedPayload,
  StepStartedPayload,
  TimerScheduledPayload,
  ValueRecordedPayload,
} from './kernel-events.js';

/**
 * What a payload field must hold. A kind with a trailing `?` may also be absent (a missing field
 * is a hole; `null` is a value, and only the `-or-null` kinds take it).
 *
 * - `index`: a non-negative safe integer (an operation's position, a generation).
 * - `string`, `string-or-null`, `number` (finite), `number-or-null`.
 * - `json`: any JSON value, `null` included, but present.
 * - `error`: a recorded error: `{name, message}` strings, an optional string `code`, an optional
 *   object `fields`.
 * - `outcome-error`: an `error` that may be absent only when the payload's `status` is
 *   `'completed'` (a failed or cancelled child carries why).
 * - `child-status`: `'completed'`, `'failed'` or `'cancelled'`.
 * - `parent`: `{executionId: string, index: integer}`.
 * - `unread`: written by the kernel, read by no fold, so not checked: a log written before the
 *   field existed still loads.
 */
export type FieldKind =
  | 'index'
  | 'string'
  | 'string-or-null'
  | 'number'
  | 'number-or-null'
  | 'json'
  | 'error'
  | 'child-status'
  | 'parent';

/** One field's entry in {@link payloadShapes}. */
export type FieldShape = FieldKind | `${FieldKind}?` | 'outcome-error' | 'unread';

/** `timer.fired`: the timer at `index` fired. */
export interface TimerFiredPayload {
  index: number;
  name: string;
}

/** `signal.timed_out`: the wait at `index` timed out (`lateSignalId`: a signal it beat, ADR 0042). */
export interface SignalTimedOutPayload {
  index: number;
  name: string;
  lateSignalId?: number;
}

/** `patch.marked`: the flow took the patched path `name` at `index`. */
export interface PatchMarkedPayload {
  index: number;
  name: string;
}

/** Each kernel event type's payload, as the fold reads it. */
export interface KernelPayloads {
  'execution.started': ExecutionStartedPayload;
  'step.started': StepStartedPayload;
  'step.attempt_failed': StepAttemptFailedPayload;
  'step.attempt_started': StepAttemptStartedPayload;
  'step.interrupted': StepInterruptedPayload;
  'step.completed': StepCompletedPayload;
  'step.failed': StepFailedPayload;
  'execution.completed': ExecutionCompletedPayload;
  'execution.failed': ExecutionFailedPayload;
  'execution.cancelled': ExecutionCancelledPayload;
  'execution.retried': ExecutionRetriedPayload;
  'execution.suspended': ExecutionSuspendedPayload;
  'execution.continued_as_new': ExecutionContinuedAsNewPayload;
  'timer.scheduled': TimerScheduledPayload;
  'timer.fired': TimerFiredPayload;
  'signal.waiting': SignalWaitingPayload;
  'signal.received': SignalReceivedPayload;
  'signal.timed_out': SignalTimedOutPayload;
  'value.recorded': ValueRecordedPayload;
  'patch.marked': PatchMarkedPayload;
  'child.started': ChildStartedPayload;
  'child.completed': ChildCompletedPayload;
}

/**
 * A payload type's shape: an entry for every field of its interface and no other (the compiler
 * holds the table and the interfaces of `kernel-events.ts` to each other), optional where the
 * field is.
 */
type ShapeOf<P> = {
  readonly [K in keyof Required<P>]: undefined extends P[K]
    ? `${FieldKind}?` | 'outcome-error' | 'unread'
    : FieldKind | 'unread';
};

/**
 * The shape of every kernel event's payload: one declarative table, read once at module load by
 * `kernel-payload.ts`, which makes a checker per event type from it. Fields are checked in the
 * order they are listed here, so an event with several bad fields is reported by its first.
 *
 * A new event type, or a new field, is a line here (and the interface in `kernel-events.ts`);
 * the fold then reads the checked payload by field name, never casting.
 */
export const payloadShapes: { readonly [T in KernelEventType]: ShapeOf<KernelPayloads[T]> } = {
  'execution.started': {
    version: 'string-or-null',
    flow: 'string',
    input: 'json',
    parent: 'parent?',
    continuedFrom: 'string?',
    rootId: 'string?',
    generation: 'index?',
    node: 'unread',
  },
  'step.started': { index: 'index', name: 'string', idempotent: 'unread', transactional: 'unread' },
  'step.attempt_failed': {
    index: 'index',
    name: 'string',
    attempt: 'number',
    retryAtMs: 'number',
    error: 'error',
  },
  'step.attempt_started': { index: 'index', attempt: 'number', name: 'string' },
  'step.interrupted': { index: 'index', name: 'string', interruptions: 'number' },
  'step.completed': { index: 'index', name: 'string', record: 'unread', result: 'json' },
  // (In the order the hand-written fold checked them, so each corrupt log is reported as before.)
  'step.failed': {
    name: 'string',
    error: 'error',
    attempts: 'number?',
    index: 'index',
    record: 'unread',
  },
  'execution.completed': { output: 'json' },
  'execution.failed': { error: 'error' },
  'execution.cancelled': { reason: 'string' },
  'execution.retried': {
    stepIndex: 'number-or-null',
    failedSequence: 'number',
    by: 'string?',
    reason: 'string?',
  },
  'execution.suspended': { wakeAtMs: 'unread' },
  'execution.continued_as_new': { successorId: 'string' },
  'timer.scheduled': { index: 'index', name: 'string', wakeAtMs: 'number' },
  'timer.fired': { index: 'index', name: 'unread' },
  'signal.waiting': { index: 'index', name: 'string', timeoutAtMs: 'number-or-null' },
  'signal.received': { index: 'index', name: 'unread', signalId: 'number', payload: 'json' },
  'signal.timed_out': { index: 'index', name: 'unread', lateSignalId: 'unread' },
  'value.recorded': { index: 'index', name: 'string', value: 'json' },
  'patch.marked': { index: 'index', name: 'string' },
  'child.started': { index: 'index', name: 'string', childId: 'string' },
  'child.completed': {
    index: 'index',
    childId: 'string',
    status: 'child-status',
    output: 'json?',
    error: 'outcome-error',
  },
};
