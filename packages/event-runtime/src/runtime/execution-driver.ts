import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { JsonValue, StoredSignal } from '../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import { decodePayload, encodePayload } from '../internal/json-codec.js';
import { childFailed, never, stepFailed, toJson } from './driver-support.js';
import type { ExecutionJournal } from './execution-journal.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import type { ExecutionState, OperationKind, StepRecord } from './execution-state.js';
import {
  checkStepName,
  type EffectContext,
  type Flow,
  type FlowContext,
  type SignalWait,
  type StepOptions,
  type TransactionHandle,
} from './flow.js';
import { EventType, type RecordedError } from './kernel-events.js';
import { recordError } from './recorded-error.js';

/** What the driver needs from its runtime. */
export interface DriverHooks {
  clock: Clock;
  /** Keep step results in the hot state (only needed to take snapshots). */
  keepResults: boolean;
  /** Waits at most this long in memory for a due timer; longer waits suspend the execution. */
  inlineWaitMs: number;
  /** Runs `work` and appends the step's completion in one database transaction. */
  transact?: (
    journal: ExecutionJournal,
    work: (tx: TransactionHandle) => unknown,
    completion: (result: unknown) => { type: string; payload: JsonValue },
  ) => Promise<unknown>;
  readSignals(executionId: string, afterSignalId: number): Promise<StoredSignal[]>;
  /** Starts a child execution (idempotent on its id). */
  startChild(
    flow: Flow<never, unknown>,
    input: JsonValue,
    childId: string,
    parent: { executionId: string; index: number },
  ): Promise<void>;
  /** A child's outcome if it settled (following continue-as-new), else undefined. */
  childOutcome(childId: string): Promise<ExecutionOutcome | undefined>;
  /** Starts the continue-as-new successor (idempotent on its id). */
  startSuccessor(
    flow: Flow<never, unknown>,
    input: JsonValue,
    successorId: string,
    predecessor: ExecutionState,
  ): Promise<void>;
}

type Terminal = { type: string; payload: JsonValue; outcome: ExecutionOutcome };

/**
 * Drives one execution on this node: runs the flow function against the state folded from the
 * log, short-circuits recorded operations, runs new effects behind durability barriers, waits on
 * timers, signals and children (suspending the execution when nothing else can progress), and
 * writes the terminal event. One driver per execution per node; it never re-reads the log.
 */
export class ExecutionDriver {
  readonly abort = new AbortController();
  readonly done: Promise<ExecutionOutcome>;
  private cursor = 0;
  private readonly names = new Set<string>();
  /** A broken rule (non-determinism) that fails the execution even if the flow catches it. */
  private fatal: LoomError | undefined;
  /** Why this node stopped driving (ownership lost, shutdown, already started elsewhere). */
  private stopped: LoomError | undefined;
  private cancelReason: string | undefined;
  private continuedTo: string | undefined;
  private resolveDone!: (outcome: ExecutionOutcome) => void;
  private resolveInterrupt!: () => void;
  private readonly interrupted: Promise<void>;
  private resolveSuspend!: (wakeAtMs: number | null) => void;
  private readonly suspended: Promise<number | null>;
  /** Effects, inline waits and lookups in progress: while any runs, the execution cannot suspend. */
  private inFlight = 0;
  private blockedWaits = 0;
  private earliestWakeAtMs: number | null = null;
  private suspendCheckScheduled = false;
  private suspending = false;
  private inbox: StoredSignal[] = [];
  private readonly consumed: Set<number>;
  private flow: Flow<never, unknown> | undefined;

  constructor(
    readonly state: ExecutionState,
    readonly journal: ExecutionJournal,
    private readonly hooks: DriverHooks,
  ) {
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    this.interrupted = new Promise((resolve) => {
      this.resolveInterrupt = resolve;
    });
    this.suspended = new Promise((resolve) => {
      this.resolveSuspend = resolve;
    });
    this.consumed = new Set(state.consumedSignals);
  }

  get executionId(): string {
    return this.state.executionId;
  }

  /** Stop driving without writing anything more (the log stays as it is for another node). */
  stop(error: LoomError): void {
    if (this.stopped !== undefined) return;
    this.stopped = error;
    this.abort.abort(error);
    this.resolveInterrupt();
  }

  /** End the execution as cancelled: its effects see the abort, the terminal is written now. */
  cancel(reason: string): void {
    if (this.cancelReason !== undefined || this.stopped !== undefined || this.suspending) return;
    this.cancelReason = reason;
    this.abort.abort(
      new LoomError(
        ErrorCode.EXECUTION_CANCELLED,
        `execution ${this.executionId} was cancelled: ${reason}`,
        {
          executionId: this.executionId,
          reason,
        },
      ),
    );
    this.resolveInterrupt();
  }

  /** Run the flow to its end, its suspension, or until this node stops driving it. */
  async run(flow: Flow<never, unknown>): Promise<ExecutionOutcome> {
    this.flow = flow;
    const finished = this.runFlow(flow);
    const first = await Promise.race([
      finished.then((terminal) => ({ kind: 'finished' as const, terminal })),
      this.suspended.then((wakeAtMs) => ({ kind: 'suspended' as const, wakeAtMs })),
      this.interrupted.then(() => ({ kind: 'interrupted' as const })),
    ]);
    if (first.kind === 'suspended')
      return this.settle(undefined, { status: 'suspended', wakeAtMs: first.wakeAtMs });
    const terminal = first.kind === 'finished' ? first.terminal : this.terminalFor(undefined);
    if (terminal === undefined)
      return this.finish({ status: 'stopped', error: this.stopped as LoomError });
    return this.settle(terminal, terminal.outcome);
  }

  private async runFlow(flow: Flow<never, unknown>): Promise<Terminal | undefined> {
    try {
      const output = await flow.run(this.context(), this.state.input as never);
      this.interrupt();
      if (this.cursor < this.state.steps.length) {
        const recorded = this.state.steps[this.cursor];
        throw this.nonDeterminism(
          `the log has operation ${this.cursor} ('${recorded?.name}') but the flow completed without asking for it`,
          recorded?.name ?? null,
          null,
        );
      }
      const value = toJson(output, `the output of execution ${this.executionId}`, this.executionId);
      return {
        type: EventType.executionCompleted,
        payload: { output: value },
        outcome: { status: 'completed', output: value },
      };
    } catch (thrown) {
      return this.terminalFor(thrown);
    }
  }

  /** Records the terminal (or the suspension), seals the journal and waits for durability. */
  private async settle(
    terminal: Terminal | undefined,
    outcome: ExecutionOutcome,
  ): Promise<ExecutionOutcome> {
    if (this.stopped !== undefined) return this.finish({ status: 'stopped', error: this.stopped });
    if (terminal !== undefined) {
      this.journal.record(terminal.type, terminal.payload);
      this.journal.setStatus('settled');
      // State changes with the record (as for steps), so a snapshot taken when it is durable agrees.
      this.applyTerminal(outcome);
    }
    this.journal.seal();
    try {
      await this.journal.flush();
    } catch (error) {
      return this.finish({ status: 'stopped', error: this.stopError(error) });
    }
    return this.finish(outcome);
  }

  private terminalFor(thrown: unknown): Terminal | undefined {
    if (this.stopped !== undefined) return undefined;
    if (this.continuedTo !== undefined) {
      const successorId = this.continuedTo;
      return {
        type: EventType.executionContinuedAsNew,
        payload: { successorId },
        outcome: { status: 'continued', successorId },
      };
    }
    if (this.cancelReason !== undefined) {
      const reason = this.cancelReason;
      return {
        type: EventType.executionCancelled,
        payload: { reason },
        outcome: { status: 'cancelled', reason },
      };
    }
    const error: RecordedError = recordError(this.fatal ?? thrown);
    return {
      type: EventType.executionFailed,
      payload: { error } as unknown as JsonValue,
      outcome: { status: 'failed', error },
    };
  }

  private applyTerminal(outcome: ExecutionOutcome): void {
    if (outcome.status === 'completed') {
      this.state.status = 'completed';
      this.state.output = outcome.output;
    } else if (outcome.status === 'failed') {
      this.state.status = 'failed';
      this.state.error = outcome.error;
    } else if (outcome.status === 'cancelled') {
      this.state.status = 'cancelled';
      this.state.cancelReason = outcome.reason;
    } else if (outcome.status === 'continued') {
      this.state.status = 'continued';
      this.state.successorId = outcome.successorId;
    }
    this.state.nextSequence = this.journal.sequence;
  }

  private finish(outcome: ExecutionOutcome): ExecutionOutcome {
    this.resolveDone(outcome);
    return outcome;
  }

  /** Turns a journal failure into the reason this node stopped. */
  private stopError(error: unknown): LoomError {
    if (this.stopped !== undefined) return this.stopped;
    const stop =
      isLoomError(error, ErrorCode.FENCE_STALE) || isLoomError(error, ErrorCode.SEQUENCE_CONFLICT)
        ? new LoomError(
            ErrorCode.OWNERSHIP_LOST,
            `this node stopped driving execution ${this.executionId}: another writer took it over`,
            { executionId: this.executionId },
            error,
          )
        : isLoomError(error)
          ? (error as LoomError)
          : new LoomError(
              ErrorCode.STORE_FAILURE,
              String(error),
              { executionId: this.executionId },
              error,
            );
    this.stop(stop);
    return stop;
  }

  /** Throws if the execution must not go on (stopped, cancelled, continued, or a rule broken). */
  private interrupt(): void {
    if (this.stopped !== undefined) throw this.stopped;
    if (this.fatal !== undefined) throw this.fatal;
    if (this.cancelReason !== undefined) throw this.abort.signal.reason;
    if (this.continuedTo !== undefined) {
      throw new LoomError(
        ErrorCode.EXECUTION_CANCELLED,
        `execution ${this.executionId} continued as new`,
        {
          executionId: this.executionId,
        },
      );
    }
  }

  private nonDeterminism(
    message: string,
    expected: string | null,
    actual: string | null,
  ): LoomError {
    this.fatal ??= new LoomError(
      ErrorCode.NON_DETERMINISM,
      `execution ${this.executionId}: ${message}. The flow's code changed under a running ` +
        'execution; pin a version or keep the old path with ctx.patched()',
      { executionId: this.executionId, expected, actual },
    );
    return this.fatal;
  }

  /** Waits for a durability barrier; a failed append means this node stops driving. */
  private async barrier(): Promise<void> {
    try {
      await this.journal.flush();
    } catch (error) {
      throw this.stopError(error);
    }
    this.interrupt();
  }

  private context(): FlowContext {
    return {
      executionId: this.executionId,
      signal: this.abort.signal,
      step: (name, fn, options) => this.step(name, fn, options),
      transaction: (name, work) => this.transaction(name, work),
      sleep: (ms, name) => this.sleepUntil(undefined, ms, name),
      sleepUntil: (atMs, name) => this.sleepUntil(atMs, undefined, name),
      waitForSignal: (name, options) => this.waitForSignal(name, options?.timeoutMs),
      child: (flow, input, options) =>
        this.child(flow as Flow<never, unknown>, input, options?.executionId) as never,
      continueAsNew: (input) => this.continueAsNew(input),
      now: () => this.recordValue('now', () => this.hooks.clock.now()) as number,
      random: () => this.recordValue('random', () => Math.random()) as number,
      uuid: () => this.recordValue('uuid', () => randomUUID()) as string,
      patched: (id) => this.patched(id),
    };
  }

  /**
   * Claims the next operation index for `name` of `kind`, checking the log's record there.
   * Step names are unique per execution; other kinds share the index but not the name check.
   */
  private claim(
    kind: OperationKind,
    name: unknown,
  ): { index: number; name: string; recorded: StepRecord | undefined } {
    this.interrupt();
    const checked = checkStepName(name, this.executionId);
    if (kind === 'step') {
      if (this.names.has(checked)) {
        throw new LoomError(
          ErrorCode.DUPLICATE_STEP_NAME,
          `execution ${this.executionId} already has a step named '${checked}': step names must be ` +
            'unique within an execution (add the loop index to the name)',
          { executionId: this.executionId, step: checked },
        );
      }
      this.names.add(checked);
    }
    const index = this.cursor++;
    const recorded = this.state.steps[index];
    if (
      recorded !== undefined &&
      ((recorded.kind ?? 'step') !== kind || recorded.name !== checked)
    ) {
      throw this.nonDeterminism(
        `operation ${index} was ${describe(recorded.kind ?? 'step', recorded.name)} in the log but the flow asked for ${describe(kind, checked)}`,
        recorded.name,
        checked,
      );
    }
    return { index, name: checked, recorded };
  }

  private replayed<T>(index: number): T {
    const recorded = this.state.steps[index];
    if (recorded?.status === 'failed')
      throw stepFailed(this.executionId, index, recorded.name, recorded.error);
    return recorded?.result as T;
  }

  private keep(value: JsonValue): JsonValue | undefined {
    return this.hooks.keepResults ? decodePayload(encodePayload(value)) : undefined;
  }

  private async step<T>(
    name: string,
    fn: (effect: EffectContext) => T | Promise<T>,
    options: StepOptions | undefined,
  ): Promise<T> {
    if (this.suspending) return never();
    const claim = this.claim('step', name);
    if (claim.recorded !== undefined && claim.recorded.status !== 'started')
      return this.replayed<T>(claim.index);
    if (typeof fn !== 'function') {
      throw new LoomError(
        ErrorCode.INVALID_STEP_NAME,
        `step '${claim.name}' needs an effect function`,
        {
          executionId: this.executionId,
        },
      );
    }
    this.inFlight++;
    try {
      if (claim.recorded === undefined) {
        const payload: JsonValue =
          options?.idempotent === true
            ? { index: claim.index, name: claim.name, idempotent: true }
            : { index: claim.index, name: claim.name };
        this.journal.record(EventType.stepStarted, payload);
        this.state.steps[claim.index] = { name: claim.name, status: 'started' };
      }
      await this.barrier();
      let result: T;
      try {
        result = await fn(this.effectContext(claim.index, claim.name));
      } catch (thrown) {
        this.interrupt();
        const error = recordError(thrown);
        this.journal.record(EventType.stepFailed, {
          index: claim.index,
          name: claim.name,
          error,
        } as never);
        this.state.steps[claim.index] = { name: claim.name, status: 'failed', error };
        throw stepFailed(this.executionId, claim.index, claim.name, error, thrown);
      }
      this.interrupt();
      const value = toJson(result, `the result of step '${claim.name}'`, this.executionId);
      this.journal.record(EventType.stepCompleted, {
        index: claim.index,
        name: claim.name,
        result: value,
      });
      const kept = this.keep(value);
      this.state.steps[claim.index] =
        kept === undefined
          ? { name: claim.name, status: 'completed' }
          : { name: claim.name, status: 'completed', result: kept };
      return result;
    } finally {
      this.settleInFlight();
    }
  }

  private async transaction<T>(
    name: string,
    work: (tx: TransactionHandle) => T | Promise<T>,
  ): Promise<T> {
    if (this.suspending) return never();
    const claim = this.claim('step', name);
    if (claim.recorded !== undefined && claim.recorded.status !== 'started')
      return this.replayed<T>(claim.index);
    const transact = this.hooks.transact;
    if (transact === undefined) {
      throw new LoomError(
        ErrorCode.TRANSACTIONS_UNSUPPORTED,
        `step '${claim.name}' is transactional, but this runtime's store cannot run transactions: use SQLite or Postgres`,
        { executionId: this.executionId },
      );
    }
    this.inFlight++;
    try {
      if (claim.recorded === undefined) {
        this.journal.record(EventType.stepStarted, {
          index: claim.index,
          name: claim.name,
          transactional: true,
        });
        this.state.steps[claim.index] = { name: claim.name, status: 'started' };
      }
      await this.barrier();
      let value: JsonValue;
      try {
        value = (await transact(this.journal, work, (result) => ({
          type: EventType.stepCompleted,
          payload: {
            index: claim.index,
            name: claim.name,
            result: toJson(result, `the result of step '${claim.name}'`, this.executionId),
          },
        }))) as JsonValue;
      } catch (thrown) {
        if (this.journal.failure !== undefined) throw this.stopError(this.journal.failure);
        this.interrupt();
        // The transaction rolled back: record the failure like any step's.
        const error = recordError(thrown);
        this.journal.record(EventType.stepFailed, {
          index: claim.index,
          name: claim.name,
          error,
        } as never);
        this.state.steps[claim.index] = { name: claim.name, status: 'failed', error };
        throw stepFailed(this.executionId, claim.index, claim.name, error, thrown);
      }
      const kept = this.keep(value);
      this.state.steps[claim.index] =
        kept === undefined
          ? { name: claim.name, status: 'completed' }
          : { name: claim.name, status: 'completed', result: kept };
      return value as T;
    } finally {
      this.settleInFlight();
    }
  }

  private effectContext(index: number, name: string): EffectContext {
    return {
      executionId: this.executionId,
      stepIndex: index,
      stepName: name,
      idempotencyKey: `${this.executionId}/${index}`,
      signal: this.abort.signal,
    };
  }

  /** `now`, `random`, `uuid`: recorded on first run, returned from the log on replay. */
  private recordValue(name: string, make: () => JsonValue): JsonValue {
    if (this.suspending) return make();
    const claim = this.claim('value', name);
    if (claim.recorded !== undefined) return claim.recorded.result ?? null;
    const value = make();
    this.journal.record(EventType.valueRecorded, { index: claim.index, name: claim.name, value });
    this.state.steps[claim.index] = {
      kind: 'value',
      name: claim.name,
      status: 'completed',
      result: value,
    };
    return value;
  }

  /**
   * True for executions that reach this point under code that has the patch: new executions,
   * and old ones that had not got this far. False when replaying an execution whose log went on
   * past this point without the marker (it ran the old code).
   */
  private patched(id: string): boolean {
    if (this.suspending) return true;
    this.interrupt();
    const name = checkStepName(id, this.executionId);
    const recorded = this.state.steps[this.cursor];
    if (recorded?.kind === 'patch' && recorded.name === name) {
      this.cursor++;
      return true;
    }
    if (recorded !== undefined) return false;
    const index = this.cursor++;
    this.journal.record(EventType.patchMarked, { index, name });
    this.state.steps[index] = { kind: 'patch', name, status: 'completed' };
    return true;
  }

  private async sleepUntil(
    atMs: number | undefined,
    ms: number | undefined,
    name = 'sleep',
  ): Promise<void> {
    if (this.suspending) return never();
    const claim = this.claim('timer', name);
    if (claim.recorded?.status === 'completed') return;
    let wakeAtMs = claim.recorded?.wakeAtMs ?? undefined;
    if (wakeAtMs === undefined || wakeAtMs === null) {
      wakeAtMs = atMs ?? this.hooks.clock.now() + checkDuration(ms, this.executionId);
      checkDuration(wakeAtMs, this.executionId);
      this.journal.record(EventType.timerScheduled, {
        index: claim.index,
        name: claim.name,
        wakeAtMs,
      });
      this.state.steps[claim.index] = {
        kind: 'timer',
        name: claim.name,
        status: 'started',
        wakeAtMs,
      };
    }
    await this.waitUntilDue(wakeAtMs);
    this.interrupt();
    this.journal.record(EventType.timerFired, { index: claim.index, name: claim.name });
    const record = this.state.steps[claim.index];
    if (record !== undefined) record.status = 'completed';
  }

  /** Returns once `wakeAtMs` has passed: at once, after a short in-memory wait, or never (suspend). */
  private async waitUntilDue(wakeAtMs: number): Promise<void> {
    const remainingMs = wakeAtMs - this.hooks.clock.now();
    if (remainingMs <= 0) return;
    if (remainingMs <= this.hooks.inlineWaitMs) {
      this.inFlight++;
      try {
        await new Promise((resolve) => setTimeout(resolve, remainingMs));
      } finally {
        this.settleInFlight();
      }
      if (this.hooks.clock.now() >= wakeAtMs) return;
    }
    return this.block(wakeAtMs);
  }

  private async waitForSignal(name: string, timeoutMs: number | undefined): Promise<SignalWait> {
    if (this.suspending) return never();
    const claim = this.claim('signal', name);
    if (claim.recorded?.status === 'completed') {
      return claim.recorded.signalId === undefined
        ? { received: false }
        : {
            received: true,
            payload: claim.recorded.result ?? null,
            signalId: claim.recorded.signalId,
          };
    }
    let timeoutAtMs = claim.recorded?.wakeAtMs ?? null;
    if (claim.recorded === undefined) {
      timeoutAtMs =
        timeoutMs === undefined
          ? null
          : this.hooks.clock.now() + checkDuration(timeoutMs, this.executionId);
      this.journal.record(EventType.signalWaiting, {
        index: claim.index,
        name: claim.name,
        timeoutAtMs,
      });
      this.state.steps[claim.index] = {
        kind: 'signal',
        name: claim.name,
        status: 'started',
        wakeAtMs: timeoutAtMs,
      };
    }
    const signal = await this.takeSignal(claim.name);
    this.interrupt();
    const record = this.state.steps[claim.index] as StepRecord;
    if (signal !== undefined) {
      this.journal.record(EventType.signalReceived, {
        index: claim.index,
        name: claim.name,
        signalId: signal.signalId,
        payload: signal.payload,
      });
      this.state.consumedSignals.push(signal.signalId);
      record.status = 'completed';
      record.signalId = signal.signalId;
      record.result = signal.payload;
      return { received: true, payload: signal.payload, signalId: signal.signalId };
    }
    if (timeoutAtMs !== null && this.hooks.clock.now() >= timeoutAtMs) {
      this.journal.record(EventType.signalTimedOut, { index: claim.index, name: claim.name });
      record.status = 'completed';
      return { received: false };
    }
    return this.block(timeoutAtMs);
  }

  /** The first unconsumed inbox signal named `name`, consumed now (so parallel waits never share one). */
  private async takeSignal(name: string): Promise<StoredSignal | undefined> {
    const pick = () =>
      this.inbox.find((signal) => signal.name === name && !this.consumed.has(signal.signalId));
    let found = pick();
    if (found === undefined) {
      this.inFlight++;
      try {
        const lastId = this.inbox[this.inbox.length - 1]?.signalId ?? 0;
        const fresh = await this.hooks.readSignals(this.executionId, lastId);
        this.inbox.push(
          ...fresh.filter(
            (signal) => signal.signalId > (this.inbox[this.inbox.length - 1]?.signalId ?? 0),
          ),
        );
      } finally {
        this.settleInFlight();
      }
      found = pick();
    }
    if (found !== undefined) this.consumed.add(found.signalId);
    return found;
  }

  private async child(
    flow: Flow<never, unknown>,
    input: unknown,
    executionId: string | undefined,
  ): Promise<unknown> {
    if (this.suspending) return never();
    const claim = this.claim('child', flow?.name);
    const recorded = claim.recorded;
    if (recorded !== undefined && recorded.status !== 'started') {
      if (recorded.status === 'failed') {
        throw childFailed(
          this.executionId,
          recorded.childId ?? '',
          recorded.error?.name === 'Cancelled' ? 'cancelled' : 'failed',
          recorded.error,
        );
      }
      return recorded.result ?? null;
    }
    const childId = recorded?.childId ?? executionId ?? `${this.executionId}.${claim.index}`;
    if (recorded === undefined) {
      const inputValue = toJson(input, `the input of child '${claim.name}'`, this.executionId);
      this.journal.record(EventType.childStarted, {
        index: claim.index,
        name: claim.name,
        childId,
      });
      this.state.steps[claim.index] = {
        kind: 'child',
        name: claim.name,
        status: 'started',
        childId,
      };
      this.inFlight++;
      try {
        await this.barrier();
        await this.hooks.startChild(flow, inputValue, childId, {
          executionId: this.executionId,
          index: claim.index,
        });
      } finally {
        this.settleInFlight();
      }
    }
    this.inFlight++;
    let outcome: ExecutionOutcome | undefined;
    try {
      outcome = await this.hooks.childOutcome(childId);
    } finally {
      this.settleInFlight();
    }
    this.interrupt();
    if (outcome === undefined) return this.block(null);
    const record = this.state.steps[claim.index] as StepRecord;
    if (outcome.status === 'completed') {
      this.journal.record(EventType.childCompleted, {
        index: claim.index,
        childId,
        status: 'completed',
        output: outcome.output,
      });
      record.status = 'completed';
      record.result = outcome.output;
      return outcome.output;
    }
    const error: RecordedError =
      outcome.status === 'failed'
        ? outcome.error
        : {
            name: 'Cancelled',
            message: outcome.status === 'cancelled' ? outcome.reason : outcome.status,
          };
    const status = outcome.status === 'cancelled' ? 'cancelled' : 'failed';
    this.journal.record(EventType.childCompleted, {
      index: claim.index,
      childId,
      status,
      error,
    } as never);
    record.status = 'failed';
    record.error = error;
    throw childFailed(this.executionId, childId, status, error);
  }

  private async continueAsNew(input: unknown): Promise<never> {
    if (this.suspending) return never();
    this.interrupt();
    const flow = this.flow as Flow<never, unknown>;
    const inputValue = toJson(input, 'the continue-as-new input', this.executionId);
    const successorId = `${this.state.rootId}#${this.state.generation + 1}`;
    this.inFlight++;
    try {
      await this.barrier();
      await this.hooks.startSuccessor(flow, inputValue, successorId, this.state);
    } finally {
      this.settleInFlight();
    }
    this.continuedTo = successorId;
    // Unwind the flow: the driver writes the terminal whatever the flow does with this.
    throw new LoomError(
      ErrorCode.EXECUTION_CANCELLED,
      `execution ${this.executionId} continued as ${successorId}`,
      {
        executionId: this.executionId,
        successorId,
      },
    );
  }

  /** The flow cannot progress past this wait now; the execution suspends when nothing else runs. */
  private block<T>(wakeAtMs: number | null): Promise<T> {
    this.blockedWaits++;
    if (wakeAtMs !== null && (this.earliestWakeAtMs === null || wakeAtMs < this.earliestWakeAtMs)) {
      this.earliestWakeAtMs = wakeAtMs;
    }
    this.scheduleSuspendCheck();
    return never();
  }

  private settleInFlight(): void {
    this.inFlight--;
    this.scheduleSuspendCheck();
  }

  private scheduleSuspendCheck(): void {
    if (this.blockedWaits === 0 || this.inFlight > 0 || this.suspendCheckScheduled) return;
    this.suspendCheckScheduled = true;
    // After this turn: a branch that is about to start another effect gets to claim it first.
    setImmediate(() => {
      this.suspendCheckScheduled = false;
      if (this.blockedWaits === 0 || this.inFlight > 0 || this.suspending) return;
      if (this.stopped !== undefined || this.cancelReason !== undefined) return;
      this.suspending = true;
      this.journal.record(EventType.executionSuspended, { wakeAtMs: this.earliestWakeAtMs });
      this.journal.setStatus('suspended', this.earliestWakeAtMs);
      this.resolveSuspend(this.earliestWakeAtMs);
    });
  }
}

function describe(kind: OperationKind, name: string): string {
  return kind === 'step' ? `'${name}'` : `${kind} '${name}'`;
}

const durationMaxMs = 100 * 365 * 24 * 3_600_000;

function checkDuration(ms: unknown, executionId: string): number {
  if (
    typeof ms !== 'number' ||
    !Number.isSafeInteger(ms) ||
    ms < 0 ||
    ms > Date.now() + durationMaxMs
  ) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `a duration or instant must be a non-negative integer of milliseconds, got ${String(ms)}`,
      { executionId },
    );
  }
  return ms;
}
