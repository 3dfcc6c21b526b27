import { randomUUID } from 'node:crypto';
import type { ExecutionStatus, JsonValue, StoredSignal } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { decodePayload, encodePayload } from '../internal/json-codec.js';
import { waitKindsOf } from '../wait-kinds.js';
import { ChildOperations } from './child-operations.js';
import { childSettledSignal } from './child-settled-signal.js';
import { type CommandSink, ExecutionMachine } from './core/execution-machine.js';
import type { ChildLookup, ExecutionOutcome } from './core/execution-outcome.js';
import type { ExecutionState } from './core/execution-state.js';
import { applyTerminal, type Terminal } from './core/execution-terminal.js';
import type { KernelEventType } from './core/kernel-events.js';
import type { DriverScope } from './driver-scope.js';
import type { ExecutionJournal } from './execution-journal.js';
import type { Flow, FlowContext } from './flow.js';
import type { KernelContext } from './kernel-context.js';
import { LazyAbort } from './lazy-abort.js';
import { StepOperations } from './step-operations.js';
import { isTransientStoreError } from './store-retry.js';
import { Suspension } from './suspension.js';
import { WaitOperations } from './wait-operations.js';

/**
 * Drives one execution on this node: runs the flow function against the state folded from the
 * log, short-circuits recorded operations, runs new effects behind durability barriers, waits on
 * timers, signals and children (suspending the execution when nothing else can progress), and
 * writes the terminal event. One driver per execution per node; it never re-reads the log.
 * What it decides without I/O (the cursor, the claim, the ending, recorded values, patches, the
 * terminal, when an effect may run) its {@link ExecutionMachine} decides; the driver is the sink
 * of the machine's commands and carries them out, feeding what the journal answers back in.
 */
export class ExecutionDriver implements DriverScope, CommandSink {
  /** Its signal is made only when the flow or an effect reads one (see `LazyAbort`). */
  readonly abort = new LazyAbort();
  readonly done: Promise<ExecutionOutcome>;
  readonly suspension: Suspension;
  readonly afterStoreFailure: boolean;
  readonly machine: ExecutionMachine;
  private resolveDone!: (outcome: ExecutionOutcome) => void;
  private resolveInterrupt!: () => void;
  private readonly interrupted: Promise<void>;
  private readonly steps: StepOperations;
  /** Made on first use: most flows never wait or start a child. */
  private waitOps: WaitOperations | undefined;
  private childOps: ChildOperations | undefined;
  private runningFlow: Flow<never, unknown> | undefined;
  /**
   * Operations waiting for the machine's `complete` or `failOperation` (an inline timer, an inbox
   * read), flat: the op and its promise's resolver and rejecter each (made on first use; few at a
   * time).
   */
  private completions: unknown[] | undefined;
  /** The lane's release of each step holding it (made on first use: only interrupted steps). */
  private lanes: Map<number, () => void> | undefined;

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
    const machine = new ExecutionMachine(state, kernel.settings, journal.sequence);
    this.machine = machine;
    this.suspension = new Suspension(machine, this, journal.clock);
    this.afterStoreFailure = kernel.storeRetried.delete(state.executionId);
    this.steps = new StepOperations(this);
  }

  /** The waits' operations (made on first use: most flows never wait). */
  get waits(): WaitOperations {
    this.waitOps ??= new WaitOperations(this);
    return this.waitOps;
  }

  /** The children's operations (made on first use). */
  get children(): ChildOperations {
    this.childOps ??= new ChildOperations(this);
    return this.childOps;
  }

  /** DriverScope: returns once `wakeAtMs` has passed (see `WaitOperations.waitUntilDue`). */
  waitUntil(op: number, wakeAtMs: number): Promise<void> {
    return this.waits.waitUntilDue(op, wakeAtMs);
  }

  /** DriverScope: resolves on the machine's `complete` for `op`, rejects on its `failOperation`. */
  awaitCompletion(op: number): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      this.completions ??= [];
      this.completions.push(op, resolve, reject);
    });
  }

  /** DriverScope: the machine reads the inbox's new signals for `op` (its `readInbox` command). */
  awaitInbox(op: number): Promise<void> {
    const read = this.awaitCompletion(op);
    this.machine.requestInbox(op);
    this.carryOut();
    return read as Promise<void>;
  }

  /** DriverScope: ends the execution as continued by `successorId`. */
  continueAs(successorId: string): void {
    this.machine.continueAs(successorId);
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
    if (this.machine.stop(error)) this.stopped(error);
  }

  /** The machine stopped for `error`: effects see the abort, `run` stops waiting for the flow. */
  private stopped(error: LoomError): void {
    this.abort.abort(error);
    this.resolveInterrupt();
  }

  /** End the execution as cancelled: its effects see the abort, the terminal is written now. */
  cancel(reason: string): void {
    const cancelled = this.machine.cancel(reason);
    if (cancelled === undefined) return;
    this.abort.abort(cancelled);
    this.resolveInterrupt();
  }

  /** Run the flow to its end, its suspension, or until this node stops driving it. */
  async run(flow: Flow<never, unknown>): Promise<ExecutionOutcome> {
    this.runningFlow = flow;
    const finished = this.runFlow(flow);
    // The first of the three, as `Promise.race` over them would give it, without the race's own
    // promise and the `then` it adds to each (three promises fewer per execution).
    const first = await new Promise<
      | { kind: 'finished'; terminal: Terminal | undefined }
      | { kind: 'suspended'; wakeAtMs: number | null }
      | { kind: 'interrupted' }
    >((resolve, reject) => {
      finished.then((terminal) => resolve({ kind: 'finished', terminal }), reject);
      this.suspension.suspended.then(
        (wakeAtMs) => resolve({ kind: 'suspended', wakeAtMs }),
        reject,
      );
      this.interrupted.then(() => resolve({ kind: 'interrupted' }), reject);
    });
    if (first.kind === 'suspended')
      return this.settle(undefined, { status: 'suspended', wakeAtMs: first.wakeAtMs });
    const terminal = first.kind === 'finished' ? first.terminal : this.machine.threw(undefined);
    if (terminal === undefined)
      return this.finish({ status: 'stopped', error: this.machine.stoppedBy as LoomError });
    return this.settle(terminal, terminal.outcome);
  }

  private async runFlow(flow: Flow<never, unknown>): Promise<Terminal | undefined> {
    let output: unknown;
    try {
      output = await flow.run(this.context(), this.flowInput() as never);
    } catch (thrown) {
      this.machine.endFlow();
      return this.machine.threw(thrown);
    }
    this.machine.endFlow();
    return this.machine.returned(output);
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
    if (!this.machine.flowEnded) return;
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
    const stopped = this.machine.stoppedBy;
    if (stopped !== undefined) return this.finish({ status: 'stopped', error: stopped });
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

  private finish(outcome: ExecutionOutcome): ExecutionOutcome {
    this.resolveDone(outcome);
    return outcome;
  }

  /** Turns a journal failure into the reason this node stopped, and stops. */
  stopError(error: unknown): LoomError {
    const stop = this.machine.stopReason(error);
    this.stop(stop);
    return stop;
  }

  /** DriverScope: carries out what the machine queued (the driver is its command sink). */
  carryOut(): void {
    this.machine.drain(this);
  }

  /** Command `append`: into the journal, in order. */
  record(type: KernelEventType, payload: JsonValue, payloadText: string | undefined): void {
    this.journal.record(type, payload, payloadText);
  }

  /** Command `status`: with the journal's next write. */
  setStatus(
    status: ExecutionStatus,
    wakeAtMs: number | null,
    wakeOnSignalsAfter: number | undefined,
    waitingFor?: number,
  ): void {
    this.journal.setStatus(
      status,
      wakeAtMs,
      wakeOnSignalsAfter,
      waitingFor === undefined ? undefined : waitKindsOf(waitingFor),
    );
  }

  /** Command `flushSoon`: this turn's write, nobody waiting (ADR 0045). */
  flushSoon(): void {
    this.journal.flushSoon();
  }

  /**
   * Command `barrier`: the journal's flush, whose settlement goes back to the machine as the
   * input `durable` or `appendFailed` (callbacks made once per execution, no promise per
   * barrier). The journal reports the sequence it made durable, in its numbering, which is the
   * machine's: the machine's appends go to it in order, and its first is the journal's next.
   */
  barrier(_upTo: number): void {
    this.journal.flushTo(this.durable, this.appendFailed);
  }

  /** Command `runEffect`: the step's effect runs now (see `StepOperations.runEffect`). */
  runEffect(op: number, attempt: number): void {
    this.steps.runEffect(op, attempt);
  }

  /** Command `runTransaction`: the transactional step's work starts now. */
  runTransaction(op: number): void {
    this.steps.runTransaction(op);
  }

  /**
   * Command `failOperation`: the operation waiting for I/O (an inbox read), or else the step
   * waiting to run its effect, throws `error` instead.
   */
  failOperation(op: number, error: unknown): void {
    const reject = this.takeCompletion(op, 2);
    if (reject !== undefined) reject(error);
    else this.steps.failOperation(op, error);
  }

  /**
   * Command `readInbox`: the store's inbox signals of this execution after `afterSignalId`, for
   * operation `op`; answered by `inboxRead`, or by `operationFailed` (a transient store failure
   * stops this node's driving, ADR 0010: found by the simulator, tools/dst).
   */
  readInbox(op: number, afterSignalId: number): void {
    const { store } = this.kernel;
    this.carryIo(
      op,
      () => store.readSignals(this.executionId, { afterSignalId }),
      (signals) => this.machine.inboxRead(op, signals as StoredSignal[]),
      true,
    );
  }

  /**
   * Command `startChild`: child `childId` of operation `op` starts (idempotent on its id; its
   * `child.started` is durable); answered by `childStarted`, or by `operationFailed` (a transient
   * store failure stops this node's driving: the parent resumes later, finds the child missing
   * and starts it then).
   */
  startChild(op: number, childId: string, input: JsonValue): void {
    const flow = this.children.flowOf(op);
    const { links } = this.kernel;
    const parent = { executionId: this.executionId, index: op };
    this.carryIo(
      op,
      () => links.startChild(flow, input, childId, parent),
      () => this.machine.childStarted(op),
      true,
    );
  }

  /** Command `lookupChild`: child `childId`'s outcome, answered by `childLookedUp`. */
  lookupChild(op: number, childId: string): void {
    const { links } = this.kernel;
    this.carryIo(
      op,
      () => links.childOutcome(childId),
      (found) => this.machine.childLookedUp(op, found as ChildLookup),
      true,
    );
  }

  /**
   * Command `startSuccessor`: the continue-as-new successor starts (idempotent on its id);
   * answered by `successorStarted`. Its store's failure is the flow's, transient or not (as
   * before the command: ADR 0046).
   */
  startSuccessor(op: number, successorId: string, input: JsonValue): void {
    const flow = this.runningFlow as Flow<never, unknown>;
    const { links } = this.kernel;
    this.carryIo(
      op,
      () => links.startSuccessor(flow, input, successorId, this.state),
      () => this.machine.successorStarted(),
      false,
    );
  }

  /**
   * Carries out the I/O of operation `op`'s command and feeds its answer back: `answered` (the
   * machine's input, true when the execution may suspend now), or `operationFailed`, where a
   * transient store failure stops this node's driving when `transientStops`.
   */
  private carryIo(
    op: number,
    io: () => Promise<unknown>,
    answered: (value: unknown) => boolean,
    transientStops: boolean,
  ): void {
    let running: Promise<unknown>;
    try {
      running = io();
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (value) => {
        if (answered(value)) this.suspension.scheduleSuspendCheck();
        this.carryOut();
      },
      (error: unknown) => {
        const transient = transientStops && isTransientStoreError(error);
        if (this.machine.operationFailed(op, error, transient))
          this.stopped(this.machine.stoppedBy as LoomError);
        else this.suspension.scheduleSuspendCheck();
        this.carryOut();
      },
    );
  }

  /** Command `armTimer`: the node's clock wakes operation `op`; answered by `timerFired`. */
  armTimer(op: number, wakeAtMs: number): void {
    const { clock } = this.kernel;
    clock.setTimer(() => this.timerFired(op), wakeAtMs - clock.now(), { keepAlive: true });
  }

  /**
   * Command `acquireLane`: step `op` waits for the node's lane for interrupted steps (ADR 0031);
   * answered by `laneAcquired` once it holds it.
   */
  acquireLane(op: number): void {
    this.kernel.suspects.acquire().then((release) => {
      this.lanes ??= new Map();
      this.lanes.set(op, release);
      this.machine.laneAcquired(op);
      this.carryOut();
    });
  }

  /** Command `releaseLane`: step `op` gives the lane back (once; again: nothing). */
  releaseLane(op: number): void {
    const release = this.lanes?.get(op);
    if (release === undefined) return;
    this.lanes?.delete(op);
    release();
  }

  /** Command `complete`: operation `op` goes on (with `value`, a child lookup's answer). */
  complete(op: number, value: unknown): void {
    this.takeCompletion(op, 1)?.(value);
  }

  /**
   * Takes operation `op`'s entry out of the completions: its resolver (`slot` 1) or rejecter
   * (`slot` 2); undefined when nothing waits for `op` there.
   */
  private takeCompletion(op: number, slot: 1 | 2): ((value: unknown) => void) | undefined {
    const completions = this.completions;
    if (completions === undefined) return undefined;
    for (let at = 0; at < completions.length; at += 3) {
      if (completions[at] !== op) continue;
      const settle = completions[at + slot] as (value: unknown) => void;
      completions.splice(at, 3);
      return settle;
    }
    return undefined;
  }

  /** Input `timerFired`: operation `op`'s inline wait is over. */
  private timerFired(op: number): void {
    if (this.machine.timerFired(op)) this.suspension.scheduleSuspendCheck();
    this.carryOut();
  }

  /** Input `durable`: every append up to `upTo` is in the log. */
  private readonly durable = (upTo: number): void => {
    try {
      this.machine.durable(upTo);
      this.carryOut();
    } catch (error) {
      // Nothing here throws by design; if something did, this node stops driving rather than
      // leave the step waiting for it hanging.
      this.appendFailed(error);
    }
  };

  /** Input `appendFailed`: the journal broke; the machine stops, its waiting effects fail. */
  private readonly appendFailed = (error: unknown): void => {
    if (this.machine.appendFailed(error)) this.stopped(this.machine.stoppedBy as LoomError);
    this.carryOut();
  };

  /** Throws if the execution must not go on (stopped, cancelled, continued, or a rule broken). */
  interrupt(): void {
    this.machine.interrupt();
  }

  private context(): FlowContext {
    return new DriverFlowContext(this, this.steps);
  }

  /** `ctx.patched`: recorded on first run, returned from the log on replay. */
  patched(id: string): boolean {
    this.ensureOpen('patched', id);
    const patched = this.machine.patched(id);
    this.carryOut();
    return patched;
  }

  /** `now`, `random`, `uuid`: recorded on first run, returned from the log on replay. */
  recordValue(name: string, make: () => JsonValue): JsonValue {
    this.ensureOpen(name);
    const value = this.machine.recordValue(name, make);
    this.carryOut();
    return value;
  }
}

/** `signal` of every DriverFlowContext: one accessor, so their objects share one shape. */
let driverFlowContextSignal: PropertyDescriptor;

/**
 * The flow's context: one class, so its object keeps fast properties (an object literal with a
 * getter is a dictionary: a hash table per execution, each `ctx.step` a lookup in it). The
 * operations stay own closures, so a flow may take one off its context (`const { step } = ctx`);
 * the execution's AbortSignal is made only for a flow that reads `signal`.
 */
class DriverFlowContext implements FlowContext {
  /**
   * An own enumerable accessor, one getter for every object of the class (so they share one
   * shape), called only when read: a spread (`{ ...ctx }`, as middleware pass contexts on)
   * carries it.
   */
  declare readonly signal: AbortSignal;
  static {
    driverFlowContextSignal = {
      get(this: DriverFlowContext): AbortSignal {
        return this.#abort.signal;
      },
      enumerable: true,
      configurable: true,
    };
  }
  readonly executionId: string;
  readonly #abort: LazyAbort;
  readonly step: FlowContext['step'];
  readonly record: FlowContext['record'];
  readonly transaction: FlowContext['transaction'];
  readonly sleep: FlowContext['sleep'];
  readonly sleepUntil: FlowContext['sleepUntil'];
  readonly waitForSignal: FlowContext['waitForSignal'];
  readonly child: FlowContext['child'];
  readonly continueAsNew: FlowContext['continueAsNew'];
  readonly now: FlowContext['now'];
  readonly random: FlowContext['random'];
  readonly uuid: FlowContext['uuid'];
  readonly patched: FlowContext['patched'];

  constructor(driver: ExecutionDriver, steps: StepOperations) {
    this.executionId = driver.executionId;
    this.#abort = driver.abort;
    Object.defineProperty(this, 'signal', driverFlowContextSignal);
    this.step = (name, fn, options) => steps.step(name, fn, options);
    this.record = (name, fn) => steps.record(name, fn);
    this.transaction = (name, work) => steps.transaction(name, work);
    this.sleep = (ms, name) => driver.waits.sleepUntil(undefined, ms, name);
    this.sleepUntil = (atMs, name) => driver.waits.sleepUntil(atMs, undefined, name);
    this.waitForSignal = (name, options) =>
      driver.waits.waitForSignal(name, options?.timeoutMs, options?.kind);
    this.child = (flow, input, options) =>
      driver.children.child(flow as Flow<never, unknown>, input, options?.executionId) as never;
    this.continueAsNew = (input) => driver.children.continueAsNew(input);
    this.now = () => driver.recordValue('now', () => driver.kernel.clock.now()) as number;
    this.random = () => driver.recordValue('random', () => Math.random()) as number;
    this.uuid = () => driver.recordValue('uuid', () => randomUUID()) as string;
    this.patched = (id) => driver.patched(id);
  }
}
