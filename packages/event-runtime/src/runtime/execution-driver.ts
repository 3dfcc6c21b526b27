import { randomUUID } from 'node:crypto';
import type { JsonValue, StoredSignal } from '../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import { decodePayload, encodePayload } from '../internal/json-codec.js';
import { ChildOperations } from './child-operations.js';
import { childSettledSignal } from './child-settled-signal.js';
import type { ExecutionOutcome } from './core/execution-outcome.js';
import type { ExecutionState, OperationKind } from './core/execution-state.js';
import { applyTerminal, type Terminal, terminalFor } from './core/execution-terminal.js';
import { continuedAsNew } from './core/flow-unwind.js';
import { EventType } from './core/kernel-events.js';
import { encodeRecorded, recordedValue } from './core/recorded-values.js';
import type { Claim, DriverScope } from './driver-scope.js';
import type { ExecutionJournal } from './execution-journal.js';
import { checkStepName, type Flow, type FlowContext } from './flow.js';
import type { KernelContext } from './kernel-context.js';
import { LazyAbort } from './lazy-abort.js';
import { StepOperations } from './step-operations.js';
import { Suspension } from './suspension.js';
import { WaitOperations } from './wait-operations.js';

/**
 * Drives one execution on this node: runs the flow function against the state folded from the
 * log, short-circuits recorded operations, runs new effects behind durability barriers, waits on
 * timers, signals and children (suspending the execution when nothing else can progress), and
 * writes the terminal event. One driver per execution per node; it never re-reads the log.
 */
export class ExecutionDriver implements DriverScope {
  /** Its signal is made only when the flow or an effect reads one (see `LazyAbort`). */
  readonly abort = new LazyAbort();
  readonly done: Promise<ExecutionOutcome>;
  readonly suspension: Suspension;
  readonly afterStoreFailure: boolean;
  private cursor = 0;
  private readonly names = new Set<string>();
  /** A broken rule (non-determinism) that fails the execution even if the flow catches it. */
  private fatal: LoomError | undefined;
  /** Why this node stopped driving (ownership lost, shutdown, already started elsewhere). */
  private stopped: LoomError | undefined;
  private cancelReason: string | undefined;
  /** The flow function returned or threw: its context refuses every operation from now on. */
  private flowEnded = false;
  private continuedTo: string | undefined;
  private resolveDone!: (outcome: ExecutionOutcome) => void;
  private resolveInterrupt!: () => void;
  private readonly interrupted: Promise<void>;
  private readonly steps: StepOperations;
  /** Made on first use: most flows never wait or start a child. */
  private waitOps: WaitOperations | undefined;
  private childOps: ChildOperations | undefined;
  private runningFlow: Flow<never, unknown> | undefined;

  /**
   * The driver is its operations' {@link DriverScope} itself (one object per execution rather
   * than a scope of a dozen closures); they see it only through that interface.
   */
  constructor(
    readonly state: ExecutionState,
    readonly journal: ExecutionJournal,
    readonly kernel: KernelContext,
  ) {
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    this.interrupted = new Promise((resolve) => {
      this.resolveInterrupt = resolve;
    });
    this.suspension = new Suspension(
      journal,
      () => this.stopped !== undefined || this.cancelReason !== undefined,
    );
    this.afterStoreFailure = kernel.storeRetried.delete(state.executionId);
    this.steps = new StepOperations(this);
  }

  private get waits(): WaitOperations {
    this.waitOps ??= new WaitOperations(this);
    return this.waitOps;
  }

  private get children(): ChildOperations {
    this.childOps ??= new ChildOperations(this);
    return this.childOps;
  }

  /** DriverScope: true once the flow function returned or threw. */
  ended(): boolean {
    return this.flowEnded;
  }

  /** DriverScope: returns once `wakeAtMs` has passed (see `WaitOperations.waitUntilDue`). */
  waitUntil(wakeAtMs: number): Promise<void> {
    return this.waits.waitUntilDue(wakeAtMs);
  }

  /** DriverScope: reads the inbox (see `WaitOperations.readInbox`). */
  readInbox(): Promise<readonly StoredSignal[]> {
    return this.waits.readInbox();
  }

  /** DriverScope: the flow being driven. */
  flow(): Flow<never, unknown> {
    return this.runningFlow as Flow<never, unknown>;
  }

  /** DriverScope: ends the execution as continued by `successorId`. */
  continueAs(successorId: string): void {
    this.continuedTo = successorId;
  }

  /** True once the driver decided to suspend (its suspension may not be durable yet). */
  get suspending(): boolean {
    return this.suspension.suspending;
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
    if (this.cancelReason !== undefined || this.stopped !== undefined || this.suspension.suspending)
      return;
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
    this.runningFlow = flow;
    const finished = this.runFlow(flow);
    const first = await Promise.race([
      finished.then((terminal) => ({ kind: 'finished' as const, terminal })),
      this.suspension.suspended.then((wakeAtMs) => ({ kind: 'suspended' as const, wakeAtMs })),
      this.interrupted.then(() => ({ kind: 'interrupted' as const })),
    ]);
    if (first.kind === 'suspended')
      return this.settle(undefined, { status: 'suspended', wakeAtMs: first.wakeAtMs });
    const terminal = first.kind === 'finished' ? first.terminal : this.terminal(undefined);
    if (terminal === undefined)
      return this.finish({ status: 'stopped', error: this.stopped as LoomError });
    return this.settle(terminal, terminal.outcome);
  }

  private async runFlow(flow: Flow<never, unknown>): Promise<Terminal | undefined> {
    let output: unknown;
    try {
      output = await flow.run(this.context(), this.flowInput() as never);
    } catch (thrown) {
      this.flowEnded = true;
      return this.terminal(thrown);
    }
    this.flowEnded = true;
    try {
      this.interrupt();
      if (this.cursor < this.state.steps.length) {
        const recorded = this.state.steps[this.cursor];
        throw this.nonDeterminism(
          `the log has operation ${this.cursor} ('${recorded?.name}') but the flow completed without asking for it`,
          recorded?.name ?? null,
          null,
        );
      }
      const payload = { output: output ?? null };
      const text = encodeRecorded(payload, `the output of execution ${this.executionId}`, {
        executionId: this.executionId,
      });
      return {
        type: EventType.executionCompleted,
        payload: payload as JsonValue,
        payloadText: text,
        outcome: { status: 'completed', output: recordedValue(payload.output, text, 'output') },
      };
    } catch (thrown) {
      return this.terminal(thrown);
    }
  }

  /**
   * The flow's input. With snapshots on, a copy: the hot state's input goes into snapshots, and
   * a flow that changes its input must not change what a resume from a snapshot replays.
   */
  private flowInput(): JsonValue {
    const input = this.state.input;
    if (!this.kernel.settings.keepResults || typeof input !== 'object' || input === null)
      return input;
    return decodePayload(encodePayload(input));
  }

  ensureOpen(operation: string, name?: unknown): void {
    if (!this.flowEnded) return;
    const named = typeof name === 'string' ? `('${name.slice(0, 200)}')` : '()';
    throw new LoomError(
      ErrorCode.CONTEXT_CLOSED,
      `ctx.${operation}${named} was called after the flow of execution ${this.executionId} ` +
        'returned: nothing ran and nothing was recorded. Await every operation inside the flow ' +
        'function, and never keep its context for later',
      { executionId: this.executionId, operation },
    );
  }

  /** Records the terminal (or the suspension), seals the journal and waits for durability. */
  private async settle(
    terminal: Terminal | undefined,
    outcome: ExecutionOutcome,
  ): Promise<ExecutionOutcome> {
    if (this.stopped !== undefined) return this.finish({ status: 'stopped', error: this.stopped });
    if (terminal !== undefined) {
      this.journal.record(terminal.type, terminal.payload, terminal.payloadText);
      // An ending child wakes its parent in the same write (ADR 0047); a continued one leaves
      // that to its successor.
      const parent = this.state.parent;
      this.journal.setSettled(
        parent === undefined || outcome.status === 'continued'
          ? undefined
          : childSettledSignal(parent.executionId, this.executionId),
      );
      // State changes with the record (as for steps), so a snapshot taken when it is durable agrees.
      applyTerminal(this.state, outcome, this.journal.sequence);
    }
    this.journal.seal();
    try {
      await this.journal.flush();
    } catch (error) {
      return this.finish({ status: 'stopped', error: this.stopError(error) });
    }
    return this.finish(outcome);
  }

  private terminal(thrown: unknown): Terminal | undefined {
    if (this.stopped !== undefined) return undefined;
    const { continuedTo, cancelReason, fatal } = this;
    return terminalFor(thrown, { continuedTo, cancelReason, fatal });
  }

  private finish(outcome: ExecutionOutcome): ExecutionOutcome {
    this.resolveDone(outcome);
    return outcome;
  }

  /** Turns a journal failure into the reason this node stopped. */
  stopError(error: unknown): LoomError {
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
  interrupt(): void {
    if (this.stopped !== undefined) throw this.stopped;
    if (this.fatal !== undefined) throw this.fatal;
    if (this.cancelReason !== undefined) throw this.abort.reason;
    if (this.continuedTo !== undefined) throw continuedAsNew(this.executionId, this.continuedTo);
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
  async barrier(): Promise<void> {
    try {
      await this.journal.flush();
    } catch (error) {
      throw this.stopError(error);
    }
    this.interrupt();
  }

  durableSoon(): void {
    // Swallowed here only: the journal keeps the failure and every later flush rejects with it.
    this.journal.flush().catch(() => {});
  }

  private context(): FlowContext {
    const abort = this.abort;
    return {
      executionId: this.executionId,
      // A getter: the execution's AbortSignal is made only for a flow that reads it.
      get signal() {
        return abort.signal;
      },
      step: (name, fn, options) => this.steps.step(name, fn, options),
      transaction: (name, work) => this.steps.transaction(name, work),
      sleep: (ms, name) => this.waits.sleepUntil(undefined, ms, name),
      sleepUntil: (atMs, name) => this.waits.sleepUntil(atMs, undefined, name),
      waitForSignal: (name, options) => this.waits.waitForSignal(name, options?.timeoutMs),
      child: (flow, input, options) =>
        this.children.child(flow as Flow<never, unknown>, input, options?.executionId) as never,
      continueAsNew: (input) => this.children.continueAsNew(input),
      now: () => this.recordValue('now', () => this.kernel.clock.now()) as number,
      random: () => this.recordValue('random', () => Math.random()) as number,
      uuid: () => this.recordValue('uuid', () => randomUUID()) as string,
      patched: (id) => {
        this.ensureOpen('patched', id);
        return this.patched(id);
      },
    };
  }

  /**
   * Claims the next operation index for `name` of `kind`, checking the log's record there.
   * Step names are unique per execution; other kinds share the index but not the name check.
   */
  claim(kind: OperationKind, name: unknown): Claim {
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

  /** `now`, `random`, `uuid`: recorded on first run, returned from the log on replay. */
  private recordValue(name: string, make: () => JsonValue): JsonValue {
    this.ensureOpen(name);
    if (this.suspension.suspending) return make();
    const claim = this.claim('value', name);
    if (claim.recorded !== undefined) return claim.recorded.result ?? null;
    const payload = { index: claim.index, name: claim.name, value: make() };
    // Refused here (a clock that gives NaN), not by the append, which would wedge the execution.
    const text = encodeRecorded(payload, `the value of ctx.${name}()`, {
      executionId: this.executionId,
    });
    const value = recordedValue(payload.value, text, 'value');
    this.journal.record(EventType.valueRecorded, payload, text);
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
    if (this.suspension.suspending) return true;
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
}

function describe(kind: OperationKind, name: string): string {
  return kind === 'step' ? `'${name}'` : `${kind} '${name}'`;
}
