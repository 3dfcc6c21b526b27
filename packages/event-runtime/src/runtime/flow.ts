import type { Clock } from '../clock.js';
import { ErrorCode, LoomError } from '../errors.js';
import { checkWellFormed } from '../internal/well-formed-text.js';
import { nameLengthMax } from './core/operation-names.js';
import type { StepRetryPolicy } from './core/step-retry-policy.js';
import type { SignalWait } from './core/wait-records.js';

/** What a step's effect receives. */
export interface StepEffectContext {
  executionId: string;
  stepIndex: number;
  stepName: string;
  /**
   * Stable across re-runs of this step (`executionId/stepIndex`): hand it to the outside world
   * so it can deduplicate, because a step interrupted by a crash runs again (at-least-once).
   */
  idempotencyKey: string;
  /**
   * Which attempt this is: 1, then 2, … when the step is retried (counted from the log, so a
   * crash does not restart it). An attempt a crash interrupted runs again under its number.
   */
  attempt: number;
  /** Fires when the execution is cancelled or this node loses it (lease or fence taken over). */
  signal: AbortSignal;
  /**
   * The runtime's clock. An effect that waits or measures (retry backoff, a timeout) arms its
   * timers here, so a test or a simulation that owns the runtime's time owns the effect's too.
   */
  clock: Clock;
}

/** What a record's function receives (`ctx.record`): a step's context, and `onDurable`. */
export interface RecordEffectContext extends StepEffectContext {
  /**
   * Calls `fn` once this record's outcome is durable (in the log), which the execution's next
   * write makes it: for announcing what the record decided only once it holds. Never on a
   * replay (a replayed record does not run its function), and never if this node stops driving
   * the execution before that write. What `fn` throws is dropped.
   */
  onDurable(fn: () => void): void;
}

/** Options of the kernel's `ctx.step` (the workflow layer's `StepOptions` adds retries and timeouts). */
export interface KernelStepOptions {
  /**
   * The effect is safe to repeat. Recorded in `step.started` for operators and higher layers;
   * the kernel re-runs an interrupted step either way (steps are at-least-once).
   */
  idempotent?: boolean;
  /**
   * Retry the effect when it throws, durably: each failed attempt is journaled
   * (`step.attempt_failed`), the backoff is a durable timer (a long one suspends the execution),
   * and the step fails (`step.failed`, with `attempts`) once the budget is spent or the error is
   * not retryable. Overrides the runtime's `stepRetry`; `false` turns retries off for this step.
   * Throws `INVALID_ARGUMENT` for a bad policy.
   */
  retry?: StepRetryPolicy | false;
}

/** The handle a transactional step's work gets: the store's own database connection. */
export type TransactionHandle = unknown;

/** What the index records a blocked `waitForSignal` as waiting for (ADR 0062). */
export type SignalWaitKind = 'signal' | 'approval' | 'question';

/** What `waitForSignal` gives back: the signal's payload, or that the wait timed out. */
export type { SignalWait };

/** What a flow function gets: durable steps, and facts about its execution. */
export interface FlowContext {
  readonly executionId: string;
  /** Fires when the execution is cancelled or this node stops driving it. */
  readonly signal: AbortSignal;
  /**
   * Run an effect once per execution (at least once across crashes) and record its result.
   * On replay a recorded step returns its recorded result without running the effect.
   * Names must be unique within an execution. The result must be JSON, and the flow gets it
   * decoded from what was recorded, on the first run as on replay (`undefined` becomes `null`).
   *
   * Error codes: `STEP_FAILED` (the effect threw, or its result is not JSON or over
   * `payloadBytesMax`: `fields.error.code` says which; replayed identically),
   * `DUPLICATE_STEP_NAME`, `INVALID_STEP_NAME`, `NON_DETERMINISM`, `EXECUTION_CANCELLED`,
   * `OWNERSHIP_LOST`, `CONTEXT_CLOSED` (called after the flow function returned).
   */
  step<T>(
    name: string,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    options?: KernelStepOptions,
  ): Promise<T>;
  /**
   * A record of something the flow decided: `fn` runs at once, with no start record and no
   * durability barrier before it, and its result is recorded as the step's `step.completed` (a
   * throw as `step.failed`), made durable with the execution's next write, which comes before
   * anything that depends on it leaves the execution (the next step's effect, a suspension, the
   * end). A replay returns the record, as for `step`; a log that has it as a step replays too.
   *
   * Use it for what may be decided twice: a crash before the record is durable leaves nothing of
   * it, so `fn` runs again on resume, and, with no start record, such a run is not counted as
   * interrupted (ADR 0066). A decision over values the flow already has (a policy's verdict, a
   * plan, the answer to an update) fits; an effect on the outside world is a `step`. Never
   * retried; `fn` gets the step's context (its `attempt` is always 1) and `onDurable`, which runs
   * a callback once the record is in the log.
   *
   * Error codes: those of `step`.
   */
  record<T>(name: string, fn: (effect: RecordEffectContext) => T | Promise<T>): Promise<T>;
  /**
   * A step whose writes go to the log's own database: `work` runs inside the database
   * transaction that also appends `step.completed`, so the step happens exactly once.
   * SQLite: `work` gets the better-sqlite3 `Database` and must be synchronous. Postgres: it gets
   * a `pg` client inside `BEGIN … COMMIT`.
   *
   * Error codes: those of `step`, and `TRANSACTIONS_UNSUPPORTED` on the memory store.
   */
  transaction<T>(name: string, work: (tx: TransactionHandle) => T | Promise<T>): Promise<T>;
  /**
   * Durable sleep. The wake time is recorded; if it is further away than the runtime's
   * `inlineWaitMs`, the execution suspends (no lease, no memory) and the timer service resumes
   * it when due, on whichever node claims it first. `name` (default 'sleep') is checked on replay.
   */
  sleep(ms: number, name?: string): Promise<void>;
  /** Durable sleep until an instant (epoch ms). */
  sleepUntil(atMs: number, name?: string): Promise<void>;
  /**
   * Wait for a signal sent with `runtime.signal(executionId, name, payload)`. Signals that
   * arrived earlier are kept in order and taken first; each is delivered to one wait. With
   * `timeoutMs`, resolves `{ received: false }` once it passes. Throws `LIMIT_EXCEEDED` when the
   * payload, with the fields of the event that records its receipt, is over `payloadBytesMax`
   * (the inbox limits the payload alone); a replay fails the same way. `kind` labels the wait in
   * the execution index while it blocks (default `signal`; `approval` or `question` for a signal a
   * person answers), so operators can filter runs by it: it changes nothing else (ADR 0062).
   */
  waitForSignal(
    name: string,
    options?: { timeoutMs?: number; kind?: SignalWaitKind },
  ): Promise<SignalWait>;
  /**
   * Start a child execution of `flow` (id `<parent>.<index>` unless given) and wait durably for
   * its output. Throws `CHILD_FAILED` if it failed or was cancelled (`fields.status`:
   * `'failed'` or `'cancelled'`, as the log recorded it), or if its output does not fit this
   * execution's record of it (`payloadBytesMax`). Cancelling the parent cancels its running
   * children.
   */
  child<I, O>(flow: Flow<I, O>, input: I, options?: { executionId?: string }): Promise<O>;
  /**
   * End this execution and start its successor (id `<root>#<generation>`) with a fresh log. It
   * never returns: it (and every later operation) throws a `ContinuedAsNew` unwind signal, not
   * an error and not `EXECUTION_CANCELLED`; a `catch` that meets it should rethrow it (the
   * execution ends as continued whatever the flow does).
   */
  continueAsNew(input: unknown): Promise<never>;
  /** The time, recorded on first run and replayed. */
  now(): number;
  /** A random number in [0, 1), recorded on first run and replayed. */
  random(): number;
  /** A random UUID, recorded on first run and replayed. */
  uuid(): string;
  /**
   * True where new code may take a new path: for executions that reach this point with the
   * patch deployed. False when replaying an execution that passed this point under old code.
   */
  patched(id: string): boolean;
}

/** A durable flow: an async function replayed against its execution's log. */
export interface Flow<I = unknown, O = unknown> {
  /** Stable name; the log records it and resume looks it up. */
  name: string;
  /** Pinned at start; resume refuses to replay under another version. */
  version?: string;
  run(ctx: FlowContext, input: I): Promise<O>;
}

/**
 * Checks a flow definition; throws `INVALID_FLOW` naming the problem (a name or version with a
 * lone surrogate or NUL included: they are keys of the registry and columns of the log).
 */
export function checkFlow(flow: Flow<never, unknown>): void {
  if (typeof flow !== 'object' || flow === null) {
    throw new LoomError(ErrorCode.INVALID_FLOW, 'a flow must be an object { name, run }');
  }
  if (typeof flow.name !== 'string' || flow.name.length === 0 || flow.name.length > nameLengthMax) {
    throw new LoomError(
      ErrorCode.INVALID_FLOW,
      `a flow needs a name of 1 to ${nameLengthMax} characters`,
      { actual: String(flow.name) },
    );
  }
  checkWellFormed(flow.name, 'name', ErrorCode.INVALID_FLOW, { flow: flow.name });
  if (typeof flow.run !== 'function') {
    throw new LoomError(ErrorCode.INVALID_FLOW, `flow '${flow.name}' has no run function`, {
      flow: flow.name,
    });
  }
  if (
    flow.version !== undefined &&
    (typeof flow.version !== 'string' || flow.version.length === 0)
  ) {
    throw new LoomError(ErrorCode.INVALID_FLOW, `flow '${flow.name}' has an invalid version`, {
      flow: flow.name,
    });
  }
  if (flow.version !== undefined) {
    checkWellFormed(flow.version, 'version', ErrorCode.INVALID_FLOW, { flow: flow.name });
  }
}
