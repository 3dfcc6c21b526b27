import type { Clock } from '../clock.js';
import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { isTransactional, type TransactionalEventStore } from '../event-store.js';
import { isThenable } from '../internal/is-thenable.js';
import type { Claim } from './core/execution-machine.js';
import type { StepRecord } from './core/execution-state.js';
import { recordedValue } from './core/recorded-values.js';
import {
  attemptThrew,
  effectReturned,
  failStep,
  nextAttempt,
  replayStep,
  stepCommitted,
  stepInterrupted,
  stepStarted,
  transactionCompleted,
} from './core/step-records.js';
import { type ResolvedRetry, resolveRetry } from './core/step-retry-policy.js';
import type { DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import type { ExecutionJournal } from './execution-journal.js';
import type {
  KernelStepOptions,
  RecordEffectContext,
  StepEffectContext,
  TransactionHandle,
} from './flow.js';
import type { LazyAbort } from './lazy-abort.js';

/**
 * `ctx.step` and `ctx.transaction`: run an effect behind a durability barrier once, and hand what
 * it did to the execution's machine, which records it (and answers from the log on replay).
 */
export class StepOperations {
  /**
   * The steps waiting for the machine's `runEffect` / `runTransaction` (made on first use, few
   * at a time: one per step in flight, found by their op).
   */
  private awaiting: PendingEffect[] | undefined;

  constructor(private readonly scope: DriverScope) {}

  /**
   * Command `runEffect`: runs attempt `attempt` of step `op`'s effect now (its start record is
   * durable), and hands what it returned or threw to the step waiting for it.
   */
  runEffect(op: number, attempt: number): void {
    const awaited = this.take(op);
    try {
      awaited.ran = (awaited.work as (effect: StepEffectContext) => unknown)(
        this.effectContext(op, awaited.name, attempt),
      );
    } catch (thrown) {
      awaited.threw = true;
      awaited.thrown = thrown;
    }
    awaited.grant();
  }

  /** Command `runTransaction`: starts transactional step `op`'s work with its `step.completed`. */
  runTransaction(op: number): void {
    const awaited = this.take(op) as AwaitedEffect;
    awaited.ran = this.scope.journal.transact(
      this.scope.kernel.store as TransactionalEventStore,
      awaited.work as (tx: unknown) => unknown,
      awaited.completion as (result: unknown) => { type: string; payload: JsonValue },
    );
    awaited.grant();
  }

  /** Command `failOperation`: step `op` will not run its effect; it throws `error`. */
  failOperation(op: number, error: unknown): void {
    this.take(op).refuse(error);
  }

  /** Step `op` waits for its effect's command: `granted` settles on it. */
  private awaitEffect(op: number, name: string, work: unknown): AwaitedEffect {
    const awaited = new AwaitedEffect(op, name, work);
    this.awaiting ??= [];
    this.awaiting.push(awaited);
    return awaited;
  }

  private take(op: number): PendingEffect {
    const awaiting = this.awaiting as PendingEffect[];
    let at = 0;
    while ((awaiting[at] as PendingEffect).op !== op) at++;
    const awaited = awaiting[at] as PendingEffect;
    awaiting[at] = awaiting[awaiting.length - 1] as PendingEffect;
    awaiting.pop();
    return awaited;
  }

  /**
   * `ctx.step`: the effect runs once, after its `step.started` is durable; with a retry policy,
   * again after each retryable failure, each failure journaled (`step.attempt_failed`) and made
   * durable before the backoff, which is a durable timer.
   */
  step<T>(
    name: string,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    options: KernelStepOptions | undefined,
  ): Promise<T> {
    // Not an async function: a replayed step answers without a frame and a promise of its own,
    // and a first run's attempts are the step's promise (one async frame per step, not two).
    // What the checks throw still reaches the caller as a rejection.
    try {
      if (!this.opened('step', name)) return never();
      // Checked before the claim: a bad policy is the caller's mistake, like a bad name.
      const retry = this.retryOf(options);
      const claim = this.claimed<T>('step', name, fn);
      if (claim instanceof Promise) return claim;
      if (
        claim.recorded !== undefined &&
        claim.recorded.retryAtMs === undefined &&
        claim.recorded.reopened !== true &&
        !this.scope.afterStoreFailure
      ) {
        return this.interrupted(name, claim, fn, retry);
      }
      if (claim.recorded === undefined) return this.firstAttempt(claim, fn, options, retry);
      return this.attempts(claim, fn, retry, undefined);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A step the log knows nothing of: its start record, then its first attempt driven by the
   * machine's commands with no async frame of its own (the step's promise, settled from the
   * effect's); a failed attempt that may be retried goes on as {@link attempts} does.
   */
  private firstAttempt<T>(
    claim: Claim,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    options: KernelStepOptions | undefined,
    retry: ResolvedRetry | undefined,
  ): Promise<T> {
    const { machine, suspension } = this.scope;
    stepStarted(machine, claim, options?.idempotent === true ? 'idempotent' : undefined);
    this.scope.carryOut();
    const attempt = nextAttempt(machine, claim);
    const first = new FirstAttempt<T>(this, claim, fn, retry, attempt);
    this.awaiting ??= [];
    this.awaiting.push(first);
    // In flight before the barrier is asked for: a refusal may come before this returns.
    suspension.beginInFlight();
    try {
      machine.requestEffect(claim.index, attempt);
      this.scope.carryOut();
    } catch (error) {
      suspension.settleInFlight();
      throw error;
    }
    return first.promise;
  }

  /** The first attempt's effect returned `result`: recorded, and the step resolves with its value. */
  firstReturned<T>(first: FirstAttempt<T>, result: unknown): void {
    const { suspension } = this.scope;
    let value: unknown;
    try {
      value = this.attemptReturned(first.claim, first.attempt, result, first.retry);
    } catch (error) {
      suspension.settleInFlight();
      first.rejectStep(error);
      return;
    }
    suspension.settleInFlight();
    first.resolveStep(value as T);
  }

  /**
   * The first attempt's effect threw `thrown`: recorded as the step's failure, or as a failed
   * attempt whose retry goes on in {@link attempts} once the failure is durable.
   */
  firstThrew<T>(first: FirstAttempt<T>, thrown: unknown): void {
    const { suspension } = this.scope;
    const { claim, retry, attempt } = first;
    try {
      const failed = this.attemptFailed(claim, attempt, thrown, retry);
      if (failed !== undefined) throw failed;
    } catch (error) {
      suspension.settleInFlight();
      first.rejectStep(error);
      return;
    }
    first.resolveStep(this.retried(claim, first.fn, retry));
  }

  /**
   * Attempt `attempt` returned `result`: recorded; returns the value the flow gets (decoded from
   * its record). Throws if the execution must not go on.
   */
  private attemptReturned(
    claim: Claim,
    attempt: number,
    result: unknown,
    retry: ResolvedRetry | undefined,
  ): unknown {
    this.scope.interrupt();
    try {
      return effectReturned(
        this.scope.machine,
        claim,
        result,
        retry === undefined ? undefined : attempt,
      );
    } finally {
      this.scope.carryOut();
    }
  }

  /**
   * Attempt `attempt` threw `thrown`: recorded (the machine decides: a failed attempt with a retry
   * to come, or the step's failure); returns the `STEP_FAILED` to throw, or undefined when the
   * policy retries. Throws if the execution must not go on.
   */
  private attemptFailed(
    claim: Claim,
    attempt: number,
    thrown: unknown,
    retry: ResolvedRetry | undefined,
  ): LoomError | undefined {
    this.scope.interrupt();
    const mayRetry = retry !== undefined && this.retryable(retry, attempt, thrown);
    const failed = attemptThrew(
      this.scope.machine,
      claim,
      attempt,
      thrown,
      retry,
      mayRetry,
      this.scope.kernel.clock.now(),
    );
    this.scope.carryOut();
    return failed;
  }

  /** The machine refused the first attempt's effect (`failOperation`): the step throws `error`. */
  firstRefused<T>(first: FirstAttempt<T>, error: unknown): void {
    this.scope.suspension.settleInFlight();
    first.rejectStep(error);
  }

  /**
   * After a failed attempt that may be retried: durable first (a crash in the backoff must not
   * forget it), then the attempts that follow.
   */
  private async retried<T>(
    claim: Claim,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    retry: ResolvedRetry | undefined,
  ): Promise<T> {
    try {
      await this.awaitDurable(claim.index);
    } finally {
      this.scope.suspension.settleInFlight();
    }
    return this.attempts(claim, fn, retry, undefined);
  }

  /**
   * What `step` and `record` check first: the context is open (else `CONTEXT_CLOSED`), and false
   * when the execution is suspending (the operation then never settles).
   */
  private opened(operation: 'step' | 'record', name: string): boolean {
    this.scope.ensureOpen(operation, name);
    return !this.scope.machine.suspending;
  }

  /**
   * The claim `step` and `record` make: a step the log has an outcome for answers with it (a
   * promise), else the claim of the step to run, whose `fn` must be a function.
   */
  private claimed<T>(operation: 'step' | 'record', name: string, fn: unknown): Claim | Promise<T> {
    const { executionId, machine } = this.scope;
    const claim = machine.claim('step', name);
    if (claim.recorded !== undefined && claim.recorded.status !== 'started')
      return Promise.resolve(replayStep(machine, claim) as T);
    if (typeof fn !== 'function') {
      throw new LoomError(
        ErrorCode.INVALID_STEP_NAME,
        `${operation} '${claim.name}' needs ${operation === 'step' ? 'an effect function' : 'a function'}`,
        { executionId },
      );
    }
    return claim;
  }

  /**
   * `ctx.record`: `fn` runs now, and only its outcome is recorded (`step.completed` or
   * `step.failed`), durable with the execution's next write (ADR 0066). A replay answers from the
   * log; a step of the name left in flight by an older writer runs again as a record.
   */
  record<T>(name: string, fn: (effect: RecordEffectContext) => T | Promise<T>): Promise<T> {
    try {
      const { executionId, abort } = this.scope;
      if (!this.opened('record', name)) return never();
      const claim = this.claimed<T>('record', name, fn);
      if (claim instanceof Promise) return claim;
      const context = new RecordContext(
        executionId,
        claim.index,
        claim.name,
        abort,
        this.scope.kernel.clock,
      );
      let ran: T | Promise<T>;
      try {
        ran = fn(context);
      } catch (thrown) {
        throw this.recordThrew(claim, context, thrown);
      }
      if (isThenable(ran)) return this.recordLater(claim, context, ran as PromiseLike<T>);
      return Promise.resolve(this.recordReturned(claim, context, ran) as T);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A record whose function answered with a promise: in flight until it settles. */
  private async recordLater<T>(
    claim: Claim,
    context: RecordContext,
    ran: PromiseLike<T>,
  ): Promise<T> {
    const { suspension } = this.scope;
    suspension.beginInFlight();
    try {
      let result: T;
      try {
        result = await ran;
      } catch (thrown) {
        // The flow returned without awaiting it: nothing may follow the terminal in the log.
        if (this.scope.machine.flowEnded) return never();
        throw this.recordThrew(claim, context, thrown);
      }
      if (this.scope.machine.flowEnded) return never();
      return this.recordReturned(claim, context, result) as T;
    } finally {
      suspension.settleInFlight();
    }
  }

  /** Records a record's result; returns the value the flow gets (decoded from its record). */
  private recordReturned(claim: Claim, context: RecordContext, result: unknown): unknown {
    this.scope.interrupt();
    try {
      return effectReturned(this.scope.machine, claim, result, undefined, true);
    } finally {
      this.scope.carryOut();
      context.recorded(this.scope.journal, this.scope.machine.lastSequence);
    }
  }

  /** Records a record's failure; returns the `STEP_FAILED` the flow gets. */
  private recordThrew(claim: Claim, context: RecordContext, thrown: unknown): LoomError {
    this.scope.interrupt();
    const failed = failStep(this.scope.machine, claim, thrown, undefined, true);
    this.scope.carryOut();
    context.recorded(this.scope.journal, this.scope.machine.lastSequence);
    return failed;
  }

  /**
   * A step replayed with its attempt in flight: the driver before this one stopped while the
   * effect ran (a crash, a lost lease). It runs again alone, in the node's lane, and is counted
   * durably (the barrier in `attempts`) before it does, so a step that kills its process every
   * time ends as poison instead of looping, and the steps that were merely beside it when it did
   * are not counted for it (ADR 0031).
   */
  private async interrupted<T>(
    name: string,
    claim: Claim,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    retry: ResolvedRetry | undefined,
  ): Promise<T> {
    const { machine } = this.scope;
    const op = claim.index;
    // The machine's `acquireLane`, answered once this step holds the node's lane.
    const acquired = this.scope.awaitCompletion(op);
    machine.requestLane(op);
    this.scope.carryOut();
    await acquired;
    const releaseLane = (): void => {
      machine.releaseLane(op);
      this.scope.carryOut();
    };
    try {
      this.scope.ensureOpen('step', name);
      const poisoned = stepInterrupted(machine, claim);
      this.scope.carryOut();
      if (poisoned !== undefined) throw poisoned;
    } catch (error) {
      releaseLane();
      throw error;
    }
    try {
      return await this.attempts(claim, fn, retry, releaseLane);
    } finally {
      releaseLane();
    }
  }

  /**
   * Runs the attempts of a step whose start is recorded (a retry, a replayed start, an interrupted
   * step); after the first one's effect settled, gives the lane back.
   */
  private async attempts<T>(
    claim: Claim,
    fn: (effect: StepEffectContext) => T | Promise<T>,
    retry: ResolvedRetry | undefined,
    releaseLane: (() => void) | undefined,
  ): Promise<T> {
    const { machine, state, suspension } = this.scope;
    for (;;) {
      const retryAtMs = (state.steps[claim.index] as StepRecord).retryAtMs;
      if (retryAtMs !== undefined) {
        await this.scope.waitUntil(claim.index, retryAtMs);
        this.scope.interrupt();
      }
      const attempt = nextAttempt(machine, claim);
      // The effect runs on the machine's `runEffect`, which follows only the `durable` input
      // covering the start record just queued; the barrier's command asks for that durability.
      // If the flow returns meanwhile (this step never awaited), nothing could record the
      // effect's outcome: the machine never grants it and `granted` never settles.
      const awaited = this.awaitEffect(claim.index, claim.name, fn);
      machine.requestEffect(claim.index, attempt);
      this.scope.carryOut();
      suspension.beginInFlight();
      try {
        // Rejects with why the execution must not go on (stopped, cancelled, journal broken).
        await awaited.granted;
        let result: T;
        try {
          if (awaited.threw) throw awaited.thrown;
          result = await (awaited.ran as T | Promise<T>);
        } catch (thrown) {
          const failed = this.attemptFailed(claim, attempt, thrown, retry);
          if (failed !== undefined) throw failed;
          // Durable before the backoff: a crash while it waits must not forget this attempt.
          await this.awaitDurable(claim.index);
          releaseLane?.();
          continue;
        }
        const value = this.attemptReturned(claim, attempt, result, retry);
        if (releaseLane !== undefined) {
          // The next interrupted step may crash the process: this completion is durable first.
          await this.awaitDurable(claim.index);
          releaseLane();
        }
        return value as T;
      } finally {
        suspension.settleInFlight();
      }
    }
  }

  /**
   * Resolves once everything step `op` recorded so far is durable (the machine's barrier and its
   * `complete`); rejects with why the execution must not go on, or the broken journal's reason.
   */
  private awaitDurable(op: number): Promise<unknown> {
    const durable = this.scope.awaitCompletion(op);
    this.scope.machine.requestDurable(op);
    this.scope.carryOut();
    return durable;
  }

  /** The step's retry policy: its own, else the runtime's; undefined for one attempt. */
  private retryOf(options: KernelStepOptions | undefined): ResolvedRetry | undefined {
    const own = options?.retry;
    if (own === false) return undefined;
    if (own === undefined) return this.scope.kernel.settings.stepRetry;
    return resolveRetry(own);
  }

  /**
   * True when another attempt may follow failed attempt `attempt`: the policy has one left,
   * nothing aborted, and the user's `retryable` (if any) says yes.
   */
  private retryable(retry: ResolvedRetry, attempt: number, thrown: unknown): boolean {
    if (attempt >= retry.attempts || this.scope.abort.aborted) return false;
    if (retry.retryable === undefined) return true;
    try {
      return retry.retryable(thrown) === true;
    } catch {
      // A predicate that throws cannot vouch for another attempt: the step fails with its error.
      return false;
    }
  }

  /** `ctx.transaction`: the effect and its `step.completed` commit in one store transaction. */
  async transaction<T>(name: string, work: (tx: TransactionHandle) => T | Promise<T>): Promise<T> {
    const { executionId, journal, machine, suspension } = this.scope;
    this.scope.ensureOpen('transaction', name);
    if (machine.suspending) return never();
    const claim = machine.claim('step', name);
    if (claim.recorded !== undefined && claim.recorded.status !== 'started')
      return replayStep(machine, claim) as T;
    const { store } = this.scope.kernel;
    if (!isTransactional(store)) {
      throw new LoomError(
        ErrorCode.TRANSACTIONS_UNSUPPORTED,
        `step '${claim.name}' is transactional, but this runtime's store cannot run transactions: use SQLite or Postgres`,
        { executionId },
      );
    }
    suspension.beginInFlight();
    try {
      if (claim.recorded === undefined) stepStarted(machine, claim, 'transactional');
      let text = '';
      const awaited = this.awaitEffect(claim.index, claim.name, work);
      awaited.completion = (result: unknown) => {
        // Thrown inside the store's transaction: the work rolls back with it.
        const completed = transactionCompleted(machine, claim, result);
        text = completed.payloadText;
        return completed;
      };
      // As a step's effect: the work starts on the machine's `runTransaction`, after the
      // `durable` covering `step.started`, and never once the flow returned meanwhile.
      machine.requestEffect(claim.index, 0);
      this.scope.carryOut();
      await awaited.granted;
      let raw: unknown;
      try {
        raw = await awaited.ran;
      } catch (thrown) {
        if (journal.failure !== undefined) throw this.scope.stopError(journal.failure);
        this.scope.interrupt();
        // The transaction rolled back: record the failure like any step's.
        const failed = failStep(machine, claim, thrown, undefined);
        this.scope.carryOut();
        throw failed;
      }
      stepCommitted(machine, claim, text);
      return recordedValue(raw ?? null, text, 'result') as T;
    } finally {
      suspension.settleInFlight();
    }
  }

  private effectContext(index: number, name: string, attempt: number): StepEffectContext {
    const { executionId, abort } = this.scope;
    return new EffectContext(executionId, index, name, attempt, abort, this.scope.kernel.clock);
  }
}

/**
 * A step waiting for the machine's command to run its effect (`runEffect`) or its transaction
 * (`runTransaction`): `grant` is called once the effect was called (what it returned or threw is
 * kept here), `refuse` with why it will not run (`failOperation`).
 */
abstract class PendingEffect {
  /** What the effect returned (a promise, for an async one), or the transaction's promise. */
  ran: unknown = undefined;
  threw = false;
  thrown: unknown = undefined;

  constructor(
    readonly op: number,
    readonly name: string,
    /** The step's effect function, or the transaction's work. */
    readonly work: unknown,
  ) {}

  abstract grant(): void;
  abstract refuse(error: unknown): void;
}

/**
 * A {@link PendingEffect} awaited by an async operation: `granted` resolves, with this record,
 * once the effect was called, or rejects with why it will not run.
 */
class AwaitedEffect extends PendingEffect {
  /** A transaction's `step.completed`, made of its work's result inside the transaction. */
  completion: ((result: unknown) => unknown) | undefined = undefined;
  readonly granted: Promise<AwaitedEffect>;
  private resolve!: (awaited: AwaitedEffect) => void;
  private reject!: (error: unknown) => void;

  constructor(op: number, name: string, work: unknown) {
    super(op, name, work);
    this.granted = new Promise<AwaitedEffect>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  grant(): void {
    this.resolve(this);
  }

  refuse(error: unknown): void {
    this.reject(error);
  }
}

/**
 * A fresh step's first attempt, driven by the machine's commands: the step's own promise,
 * settled from its effect's outcome through {@link StepOperations} (no async frame, no promise
 * for the grant).
 */
class FirstAttempt<T> extends PendingEffect {
  readonly promise: Promise<T>;
  resolveStep!: (value: T | PromiseLike<T>) => void;
  rejectStep!: (error: unknown) => void;

  constructor(
    private readonly steps: StepOperations,
    readonly claim: Claim,
    readonly fn: (effect: StepEffectContext) => T | Promise<T>,
    readonly retry: ResolvedRetry | undefined,
    readonly attempt: number,
  ) {
    super(claim.index, claim.name, fn);
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolveStep = resolve;
      this.rejectStep = reject;
    });
  }

  /** The effect was called: its outcome is recorded a turn later, as an awaited one would be. */
  grant(): void {
    if (this.threw) {
      queueMicrotask(() => this.steps.firstThrew(this, this.thrown));
    } else if (isThenable(this.ran)) {
      // Promise.resolve: a native promise as it is, any other thenable adopted as `await` would
      // (its `then` called later, once, whatever it does).
      Promise.resolve(this.ran).then(
        (result) => this.steps.firstReturned(this, result),
        (thrown: unknown) => this.steps.firstThrew(this, thrown),
      );
    } else {
      queueMicrotask(() => this.steps.firstReturned(this, this.ran));
    }
  }

  refuse(error: unknown): void {
    this.steps.firstRefused(this, error);
  }
}

/** `signal` of every EffectContext: one accessor, so their objects share one shape. */
let effectContextSignal: PropertyDescriptor;

/**
 * What an effect is handed: one class, so each step's context is a plain object of one shape
 * with no closure of its own; `signal` is read through the execution's lazy abort, so the
 * AbortSignal is made only for an effect that reads it.
 */
class EffectContext implements StepEffectContext {
  /**
   * An own enumerable accessor, one getter for every object of the class (so they share one
   * shape), called only when read: a spread (`{ ...ctx }`, as middleware pass contexts on)
   * carries it.
   */
  declare readonly signal: AbortSignal;
  static {
    effectContextSignal = {
      get(this: EffectContext): AbortSignal {
        return this.#abort.signal;
      },
      enumerable: true,
      configurable: true,
    };
  }
  readonly idempotencyKey: string;
  // Private (#): the context's own keys stay those of StepEffectContext.
  readonly #abort: LazyAbort;
  constructor(
    readonly executionId: string,
    readonly stepIndex: number,
    readonly stepName: string,
    readonly attempt: number,
    abort: LazyAbort,
    readonly clock: Clock,
  ) {
    this.idempotencyKey = `${executionId}/${stepIndex}`;
    this.#abort = abort;
    Object.defineProperty(this, 'signal', effectContextSignal);
  }
}

/**
 * What a record's function is handed: a step's context (attempt 1) and `onDurable`, whose
 * callbacks wait for the journal to make the record's outcome durable.
 */
class RecordContext extends EffectContext implements RecordEffectContext {
  #callbacks: (() => void)[] | undefined;
  #journal: ExecutionJournal | undefined;
  #upTo = -1;

  constructor(
    executionId: string,
    stepIndex: number,
    stepName: string,
    abort: LazyAbort,
    clock: Clock,
  ) {
    super(executionId, stepIndex, stepName, 1, abort, clock);
  }

  onDurable(fn: () => void): void {
    if (this.#journal === undefined) {
      this.#callbacks ??= [];
      this.#callbacks.push(fn);
    } else {
      this.#journal.whenDurable(this.#upTo, () => runDropping(fn));
    }
  }

  /**
   * The outcome is queued as sequence `upTo` (the machine's numbering, which the journal's
   * follows: read from the machine, since a drain already under way may not have handed it to
   * the journal yet): the callbacks wait for the journal to make it durable.
   */
  recorded(journal: ExecutionJournal, upTo: number): void {
    this.#journal = journal;
    this.#upTo = upTo;
    const callbacks = this.#callbacks;
    if (callbacks === undefined) return;
    this.#callbacks = undefined;
    journal.whenDurable(this.#upTo, () => {
      for (const fn of callbacks) runDropping(fn);
    });
  }
}

function runDropping(fn: () => void): void {
  try {
    fn();
  } catch {
    // Documented: what an onDurable callback throws is dropped (the record holds either way).
  }
}
