// The pure half of driving one execution (ADR 0046): where the flow is in its log, what the log
// says there, why the execution must stop, and which events to record. It never awaits and never
// calls out: what it wants written it queues as commands, which the driver (the shell) drains into
// the journal after each call. Here: the cursor, the claim, the ending, recorded values, patches,
// the terminal, the decision to suspend, when an effect may run and the inbox's signals; a step's
// records are `step-records.ts`, a wait's `wait-records.ts`, a child's `child-records.ts`, over
// this machine. The order of an operation's work is still the driver's operations' (ADR 0046,
// step 8).
import type { ExecutionStatus, JsonValue, StoredSignal } from '../../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../../errors.js';
import type { ChildLookup } from './execution-outcome.js';
import type { ExecutionState, OperationKind, StepRecord } from './execution-state.js';
import { type Terminal, terminalFor } from './execution-terminal.js';
import { continuedAsNew, type FlowUnwind } from './flow-unwind.js';
import { EventType, type KernelEventType } from './kernel-events.js';
import { checkStepName } from './operation-names.js';
import { encodeRecorded, recordedValue } from './recorded-values.js';
import { SignalInbox } from './signal-inbox.js';

/** An operation's place in the log: its index, its checked name, and what the log has there. */
export interface Claim {
  index: number;
  name: string;
  recorded: StepRecord | undefined;
}

/**
 * What carries out the machine's commands (the execution's journal), one method per kind, called
 * in the order the machine queued them by {@link ExecutionMachine.drain}.
 */
export interface CommandSink {
  /** Record the event (`payloadText`, when given, is the payload as the log must store it). */
  record(type: KernelEventType, payload: JsonValue, payloadText: string | undefined): unknown;
  /**
   * Set the execution's status in the next write (`wakeOnSignalsAfter`: a suspension's signal
   * guard, ADR 0033; `waitingFor`: what the suspension waits for, bits of `waitKindBits`, ADR 0062).
   */
  setStatus(
    status: ExecutionStatus,
    wakeAtMs: number | null,
    wakeOnSignalsAfter: number | undefined,
    waitingFor?: number,
  ): void;
  /** Make what is recorded durable in this turn's write, with nobody waiting for it (ADR 0045). */
  flushSoon(): void;
  /**
   * Make every append up to sequence `upTo` durable; answer with {@link ExecutionMachine.durable}
   * (`upTo`) once it is, or {@link ExecutionMachine.appendFailed} if the journal broke.
   */
  barrier(upTo: number): void;
  /**
   * Run attempt `attempt` of the effect of step `op` (its operation index) now: its start record
   * is durable. Called only after the `durable` input that covers that record.
   */
  runEffect(op: number, attempt: number): void;
  /** Run the work of transactional step `op` now, with its `step.completed` in one transaction. */
  runTransaction(op: number): void;
  /**
   * Operation `op` will not go on: it throws `error`. A step waiting to run its effect: why the
   * execution must not go on (a `LoomError`, or a continue-as-new's unwind); an operation waiting
   * for I/O (an inbox read): what the I/O failed with, or why the machine stopped for it.
   */
  failOperation(op: number, error: unknown): void;
  /** Wake operation `op` at `wakeAtMs` (an inline wait): answer {@link ExecutionMachine.timerFired}. */
  armTimer(op: number, wakeAtMs: number): void;
  /**
   * Read the execution's inbox signals newer than `afterSignalId` for operation `op`: answer
   * {@link ExecutionMachine.inboxRead} with them, or {@link ExecutionMachine.operationFailed}.
   */
  readInbox(op: number, afterSignalId: number): void;
  /**
   * Start child `childId` of operation `op` (this execution's child at index `op`) with `input`,
   * idempotently: `op`'s `child.started` is durable. Answer {@link ExecutionMachine.childStarted}
   * or {@link ExecutionMachine.operationFailed}.
   */
  startChild(op: number, childId: string, input: JsonValue): void;
  /**
   * Look up child `childId`'s outcome for operation `op`: answer
   * {@link ExecutionMachine.childLookedUp} or {@link ExecutionMachine.operationFailed}.
   */
  lookupChild(op: number, childId: string): void;
  /**
   * Start this execution's continue-as-new successor `successorId` with `input`, idempotently:
   * everything recorded before is durable. Answer {@link ExecutionMachine.successorStarted} or
   * {@link ExecutionMachine.operationFailed} (op {@link successorOp}).
   */
  startSuccessor(op: number, successorId: string, input: JsonValue): void;
  /**
   * Wait for the node's one lane for interrupted steps (ADR 0031) for step `op`: answer
   * {@link ExecutionMachine.laneAcquired} once it holds it.
   */
  acquireLane(op: number): void;
  /** Step `op` gives the lane back (a lane not held, or given back already: nothing). */
  releaseLane(op: number): void;
  /**
   * Operation `op` may go on: what it waited for (an inline timer, an inbox read, a child's start
   * or lookup, a successor's start, a barrier, the lane) happened. `value`: a child lookup's answer (undefined for the
   * rest; what an inbox read learned is the machine's `inbox`).
   */
  complete(op: number, value: unknown): void;
}

/** The op a continue-as-new's successor start is answered for (it claims no operation index). */
export const successorOp = -1;

/** The kinds of queued commands, as stored in the queue. */
const APPEND = 0;
const STATUS = 1;
const FLUSH_SOON = 2;
const BARRIER = 3;
const RUN_EFFECT = 4;
const RUN_TRANSACTION = 5;
const FAIL_OPERATION = 6;
const ARM_TIMER = 7;
const COMPLETE = 8;
const READ_INBOX = 9;
const START_CHILD = 10;
const LOOKUP_CHILD = 11;
const START_SUCCESSOR = 12;
const ACQUIRE_LANE = 13;
const RELEASE_LANE = 14;

/** What {@link ExecutionMachine.waitUntil} decided: the time has come, a timer is armed, or block. */
export const WaitDecision = { due: 0, armed: 1, block: 2 } as const;
export type WaitDecision = (typeof WaitDecision)[keyof typeof WaitDecision];
/** Slots per command in the queue: its kind and up to three arguments. */
const STRIDE = 4;

/** The runtime's settings the machine decides with (the runtime's resolved settings fit). */
export interface MachineSettings {
  /** Snapshots are on: the state keeps results (decoded from their stored text). */
  readonly keepResults: boolean;
  /** Interruptions of one step's attempt in a row before it is poison (ADR 0031). */
  readonly stepInterruptionsMax: number;
  /** The longest wait kept in memory (an armed timer); a longer one suspends the execution. */
  readonly inlineWaitMs: number;
}

/**
 * One execution's cursor over its folded state, and its ending. The state is the machine's: what
 * it records it also applies to the state, so a snapshot taken once the record is durable agrees.
 */
export class ExecutionMachine {
  /**
   * The commands queued since the last drain, flat (kind and three arguments each), so queuing
   * makes no object and the array keeps its room from one drain to the next.
   */
  private readonly queue: unknown[] = [];
  private queueLength = 0;
  /** A drain is carrying commands out (one that calls the machine again queues behind them). */
  private draining = false;
  /** The sequence the next append gets (the journal's numbering: it records them in order). */
  private nextSequence: number;
  /**
   * Steps waiting for the durability of their start record before their effect may run, flat:
   * the op, the sequence that must be durable, the attempt (0: a transaction) each.
   */
  private awaitingEffects: number[] | undefined;
  /**
   * Operations waiting for the durability of the records before them, flat: the op, the sequence
   * that must be durable, the command that answers (`START_CHILD`, `START_SUCCESSOR`, or
   * `COMPLETE` for a plain barrier), the id and the input each.
   */
  private awaitingStarts: unknown[] | undefined;
  /** The flow function returned or threw: an effect still waiting for its barrier never runs. */
  private flowDone = false;
  private cursor = 0;
  private readonly names = new Set<string>();
  /** A broken rule (non-determinism) that fails the execution even if the flow catches it. */
  private fatal: LoomError | undefined;
  /** Why this node stopped driving (ownership lost, shutdown, already started elsewhere). */
  private stopped: LoomError | undefined;
  /** The error a cancelled execution's operations throw, and its reason. */
  private cancelled: LoomError | undefined;
  private cancelReason: string | undefined;
  private continuedTo: string | undefined;
  /** Effects, inline waits and lookups in progress: while any runs, the execution cannot suspend. */
  private inFlight = 0;
  private blockedWaits = 0;
  private earliestWakeAtMs: number | null = null;
  /**
   * The fewest inbox signals a blocked signal or child wait had seen (the newest id it read):
   * the suspension's guard, so the store makes it due at once if a newer signal came meanwhile
   * (ADR 0033). Undefined while only timers block.
   */
  private signalsSeen: number | undefined;
  /** What the blocked waits wait for: bits of `waitKindBits` (ADR 0062). */
  private waitingFor = 0;
  private suspended = false;
  /** The signals read from the inbox and those taken (made on the first signal or child wait). */
  private signalInbox: SignalInbox | undefined;

  /**
   * Over `state`, whose next append gets sequence `nextSequence` (the journal's next; by default
   * the one after the folded log).
   */
  constructor(
    readonly state: ExecutionState,
    readonly settings: MachineSettings,
    nextSequence: number = state.nextSequence,
  ) {
    this.nextSequence = nextSequence;
  }

  /** The sequence of the last append queued (-1 before any). */
  get lastSequence(): number {
    return this.nextSequence - 1;
  }

  /** True once the flow function returned or threw. */
  get flowEnded(): boolean {
    return this.flowDone;
  }

  /** The flow function returned or threw: its context refuses every operation from now on. */
  endFlow(): void {
    this.flowDone = true;
  }

  /**
   * Step `op` (its claim's index) wants to run its effect's attempt `attempt` (0: the work of a
   * transactional step). Queues a `barrier` over every append queued so far, its start record
   * (`step.started`, `step.attempt_started`, `step.interrupted`) among them; the `runEffect` (or
   * `runTransaction`) follows only the {@link durable} input that covers it, and a
   * `failOperation` follows instead if the execution must not go on by then. This is the rule
   * that an effect never runs before its start is durable, as a property of the commands.
   */
  requestEffect(op: number, attempt: number): void {
    const upTo = this.nextSequence - 1;
    this.awaitingEffects ??= [];
    this.awaitingEffects.push(op, upTo, attempt);
    this.enqueue(BARRIER, upTo, undefined, undefined);
  }

  /**
   * Input: every append up to `upTo` is durable. Each step waiting for it runs its effect (a
   * `runEffect` or `runTransaction`), fails with why the execution must not go on
   * (`failOperation`), or, once the flow function has ended, never runs (nothing could record
   * its outcome).
   */
  durable(upTo: number): void {
    if (this.awaitingStarts !== undefined && this.awaitingStarts.length > 0) this.grantStarts(upTo);
    const waiting = this.awaitingEffects;
    if (waiting === undefined || waiting.length === 0) return;
    let kept = 0;
    for (let at = 0; at < waiting.length; at += 3) {
      const op = waiting[at] as number;
      const cover = waiting[at + 1] as number;
      const attempt = waiting[at + 2] as number;
      if (cover > upTo) {
        waiting[kept] = op;
        waiting[kept + 1] = cover;
        waiting[kept + 2] = attempt;
        kept += 3;
        continue;
      }
      const interruption = this.interruption();
      if (interruption !== undefined) this.enqueue(FAIL_OPERATION, op, interruption, undefined);
      else if (!this.flowDone)
        this.enqueue(attempt === 0 ? RUN_TRANSACTION : RUN_EFFECT, op, attempt, undefined);
    }
    waiting.length = kept;
  }

  /**
   * Child `childId` of operation `op` is to start with `input` (its checked input; `child.started`
   * queued, or read from the log). Queues a `barrier` over every append queued so far; the
   * `startChild` follows only the {@link durable} input that covers it (no child starts before
   * its parent's `child.started` is durable: a crash in between leaves a child the parent's log
   * does not know), and a `failOperation` instead if the execution must not go on by then. In
   * flight until its answer, {@link childStarted} or {@link operationFailed}.
   */
  requestChildStart(op: number, childId: string, input: JsonValue): void {
    this.requestStart(op, START_CHILD, childId, input);
  }

  /**
   * The continue-as-new successor `successorId` is to start with `input` (checked): as
   * {@link requestChildStart}, behind the durability of everything recorded before (the
   * successor's log starts where this one ends), answered by {@link successorStarted}; its op is
   * {@link successorOp}.
   */
  requestSuccessorStart(successorId: string, input: JsonValue): void {
    this.requestStart(successorOp, START_SUCCESSOR, successorId, input);
  }

  /**
   * Operation `op` (a step) may go on only once everything queued so far is durable (a failed
   * attempt before its backoff, a completion before the lane is given back): queues a `barrier`;
   * the {@link durable} input that covers it queues `complete{op}`, or `failOperation{op}` when
   * the execution must not go on by then. The step counts as in flight itself.
   */
  requestDurable(op: number): void {
    this.requestStart(op, COMPLETE, undefined, undefined);
  }

  /**
   * Step `op` (an interrupted one) needs the node's lane to run alone: queues `acquireLane`,
   * answered by {@link laneAcquired}. Not in flight meanwhile: an execution whose other waits
   * all block may suspend while this one waits its turn (as before the command).
   */
  requestLane(op: number): void {
    this.enqueue(ACQUIRE_LANE, op, undefined, undefined);
  }

  /** Input: step `op` holds the lane. Queues `complete{op}`. */
  laneAcquired(op: number): void {
    this.enqueue(COMPLETE, op, undefined, undefined);
  }

  /** Step `op` is done with the lane (its effect settled, or it will not run): `releaseLane`. */
  releaseLane(op: number): void {
    this.enqueue(RELEASE_LANE, op, undefined, undefined);
  }

  private requestStart(
    op: number,
    kind: number,
    id: string | undefined,
    input: JsonValue | undefined,
  ): void {
    const upTo = this.nextSequence - 1;
    // A plain barrier's op counts itself in flight; a start is in flight until its answer.
    if (kind !== COMPLETE) this.inFlight++;
    this.awaitingStarts ??= [];
    this.awaitingStarts.push(op, upTo, kind, id, input);
    this.enqueue(BARRIER, upTo, undefined, undefined);
  }

  /**
   * Each start or barrier the durability up to `upTo` covers: its `startChild` / `startSuccessor`
   * / `complete`, or its `failOperation` when the execution must not go on. Unlike an effect, a
   * start is carried out even once the flow function has ended: its record is in the log (as
   * before, ADR 0046).
   */
  private grantStarts(upTo: number): void {
    const waiting = this.awaitingStarts as unknown[];
    let kept = 0;
    for (let at = 0; at < waiting.length; at += 5) {
      const op = waiting[at];
      const cover = waiting[at + 1] as number;
      const kind = waiting[at + 2] as number;
      const id = waiting[at + 3];
      const input = waiting[at + 4];
      if (cover > upTo) {
        waiting[kept] = op;
        waiting[kept + 1] = cover;
        waiting[kept + 2] = kind;
        waiting[kept + 3] = id;
        waiting[kept + 4] = input;
        kept += 5;
        continue;
      }
      const interruption = this.interruption();
      if (interruption === undefined) {
        this.enqueue(kind, op, id, input);
      } else {
        if (kind !== COMPLETE) this.inFlight--;
        this.enqueue(FAIL_OPERATION, op, interruption, undefined);
      }
    }
    waiting.length = kept;
  }

  /** Input: child `op`'s start returned. Queues `complete{op}`; true when it may suspend now. */
  childStarted(op: number): boolean {
    return this.answered(op, undefined);
  }

  /** Input: the successor's start returned. Queues `complete{successorOp}`; see `childStarted`. */
  successorStarted(): boolean {
    return this.answered(successorOp, undefined);
  }

  /**
   * Operation `op` (a child wait) needs child `childId`'s outcome: queues `lookupChild`, in
   * flight until its answer, {@link childLookedUp} or {@link operationFailed}.
   */
  requestChildLookup(op: number, childId: string): void {
    this.inFlight++;
    this.enqueue(LOOKUP_CHILD, op, childId, undefined);
  }

  /**
   * Input: child lookup `op` found `found` (the outcome, undefined while the child runs, or
   * `childMissing`). Queues `complete{op, found}`; true when the execution may suspend now.
   */
  childLookedUp(op: number, found: ChildLookup): boolean {
    return this.answered(op, found);
  }

  /** An I/O command of `op` answered: `complete{op, value}`, out of flight. */
  private answered(op: number, value: unknown): boolean {
    this.enqueue(COMPLETE, op, value, undefined);
    return this.settleInFlight();
  }

  /**
   * Operation `op` cannot go on before `wakeAtMs` (a timer, a retry's backoff); it is `nowMs`.
   * `due` when the time has come; `armed` for a wait of up to `inlineWaitMs`: the wait counts as
   * in flight (the execution does not suspend meanwhile) and an `armTimer` is queued, answered
   * by {@link timerFired}; otherwise `block` (the caller blocks, see {@link block}).
   */
  waitUntil(op: number, wakeAtMs: number, nowMs: number): WaitDecision {
    const remainingMs = wakeAtMs - nowMs;
    if (remainingMs <= 0) return WaitDecision.due;
    if (remainingMs > this.settings.inlineWaitMs) return WaitDecision.block;
    this.inFlight++;
    this.enqueue(ARM_TIMER, op, wakeAtMs, undefined);
    return WaitDecision.armed;
  }

  /**
   * Input: operation `op`'s armed timer fired. Queues its `complete` (it goes on, and looks at
   * the time again); true when the execution may suspend now (see `settleInFlight`).
   */
  timerFired(op: number): boolean {
    this.enqueue(COMPLETE, op, undefined, undefined);
    return this.settleInFlight();
  }

  /**
   * The signals this execution has read from its inbox, and those its waits took (the log's
   * taken ones among them): the machine is their one keeper.
   */
  get inbox(): SignalInbox {
    this.signalInbox ??= new SignalInbox(this.state.consumedSignals);
    return this.signalInbox;
  }

  /**
   * Operation `op` (a signal or child wait) needs the inbox's newer signals: queues `readInbox`
   * after the newest read so far. The read counts as in flight until its answer,
   * {@link inboxRead} or {@link operationFailed}.
   */
  requestInbox(op: number): void {
    this.inFlight++;
    this.enqueue(READ_INBOX, op, this.inbox.newestSeen, undefined);
  }

  /**
   * Input: operation `op`'s inbox read returned `signals`. They join the inbox (one read before
   * is skipped), and `complete{op}` is queued. True when the execution may suspend now (see
   * `settleInFlight`).
   */
  inboxRead(op: number, signals: readonly StoredSignal[]): boolean {
    this.inbox.add(signals);
    return this.answered(op, undefined);
  }

  /**
   * Input: the I/O operation `op` waited for (an inbox read, a child's start or lookup, a
   * successor's start) failed with `error`. A `transient`
   * store failure is not the flow's to see: the machine stops for it (this node resumes the
   * execution from the log after a backoff, ADR 0010) and the operation fails with that reason;
   * any other error is the operation's, thrown into the flow. Queues `failOperation{op}`; true
   * when this stopped the machine.
   */
  operationFailed(op: number, error: unknown, transient: boolean): boolean {
    this.inFlight--;
    if (!transient) {
      this.enqueue(FAIL_OPERATION, op, error, undefined);
      return false;
    }
    const stopped = this.stop(this.stopReason(error));
    this.enqueue(FAIL_OPERATION, op, this.stopped, undefined);
    return stopped;
  }

  /**
   * Input: an append failed (the journal broke: a stale fence, the store). Stops the machine for
   * it (see {@link stopReason}) and fails every step waiting to run its effect, and every child
   * or successor waiting to start, with that reason.
   * True when this stopped the machine (it had not stopped before).
   */
  appendFailed(error: unknown): boolean {
    const stopped = this.stop(this.stopReason(error));
    const reason = this.stopped as LoomError;
    const starts = this.awaitingStarts;
    if (starts !== undefined) {
      for (let at = 0; at < starts.length; at += 5) {
        if (starts[at + 2] !== COMPLETE) this.inFlight--;
        this.enqueue(FAIL_OPERATION, starts[at], reason, undefined);
      }
      starts.length = 0;
    }
    const waiting = this.awaitingEffects;
    if (waiting === undefined) return stopped;
    for (let at = 0; at < waiting.length; at += 3) {
      this.enqueue(FAIL_OPERATION, waiting[at], reason, undefined);
    }
    waiting.length = 0;
    return stopped;
  }

  get executionId(): string {
    return this.state.executionId;
  }

  /** Why this node stopped driving, once it did. */
  get stoppedBy(): LoomError | undefined {
    return this.stopped;
  }

  /** True once the execution was stopped or cancelled: it must not suspend any more. */
  get ending(): boolean {
    return this.stopped !== undefined || this.cancelReason !== undefined;
  }

  /** True once the suspension is queued: operations the flow asks for after it never settle. */
  get suspending(): boolean {
    return this.suspended;
  }

  /** When a suspended execution is due (null: only a signal or a child's end wakes it). */
  get wakeAtMs(): number | null {
    return this.earliestWakeAtMs;
  }

  /** An effect, inline wait or lookup starts; pair with `settleInFlight`. */
  beginInFlight(): void {
    this.inFlight++;
  }

  /**
   * True when an effect, inline wait or lookup other than the caller's own is in flight (the
   * caller counts as one: ask from inside a `beginInFlight` … `settleInFlight` pair).
   */
  get othersInFlight(): boolean {
    return this.inFlight > 1;
  }

  /**
   * The effect, inline wait or lookup ended. True when the execution may suspend now: the shell
   * then calls `endOfTurn` once this turn is over.
   */
  settleInFlight(): boolean {
    this.inFlight--;
    return this.maySuspend();
  }

  /**
   * A wait cannot progress before `wakeAtMs` (null: before a signal or a child's end); for a wait a
   * signal ends, `signalsSeen` is the newest inbox id it had read when it found nothing. `kinds`:
   * what it waits for, as bits of `waitKindBits` (the shell's: the core only ORs them into the
   * suspension). True when the execution may suspend now (see `settleInFlight`).
   */
  block(wakeAtMs: number | null, signalsSeen?: number, kinds = 0): boolean {
    this.blockedWaits++;
    this.waitingFor |= kinds;
    if (signalsSeen !== undefined) {
      this.signalsSeen = Math.min(signalsSeen, this.signalsSeen ?? signalsSeen);
    }
    if (wakeAtMs !== null && (this.earliestWakeAtMs === null || wakeAtMs < this.earliestWakeAtMs)) {
      this.earliestWakeAtMs = wakeAtMs;
    }
    return this.maySuspend();
  }

  /**
   * The end of a turn in which the execution might have come to rest (after it, a branch about to
   * start another effect has claimed it). Suspends when some wait is blocked and nothing is in
   * flight, unless the execution is ending: queues `execution.suspended` with the earliest wake
   * and the status, and returns true (once).
   */
  endOfTurn(): boolean {
    if (!this.maySuspend() || this.suspended || this.ending) return false;
    this.suspended = true;
    this.record(EventType.executionSuspended, { wakeAtMs: this.earliestWakeAtMs }, undefined);
    // The one status command is a suspension's: its wait kinds ride in the status's slot.
    this.enqueue(STATUS, this.waitingFor, this.earliestWakeAtMs, this.signalsSeen);
    return true;
  }

  private maySuspend(): boolean {
    return this.blockedWaits > 0 && this.inFlight === 0;
  }

  /** Stops driving without recording anything more; false when it had stopped already. */
  stop(error: LoomError): boolean {
    if (this.stopped !== undefined) return false;
    this.stopped = error;
    return true;
  }

  /**
   * Ends the execution as cancelled; returns the error its effects and operations see, or
   * undefined when it was stopped, cancelled or suspended already (nothing changes).
   */
  cancel(reason: string): LoomError | undefined {
    if (this.cancelReason !== undefined || this.stopped !== undefined || this.suspended)
      return undefined;
    this.cancelReason = reason;
    this.cancelled = new LoomError(
      ErrorCode.EXECUTION_CANCELLED,
      `execution ${this.executionId} was cancelled: ${reason}`,
      { executionId: this.executionId, reason },
    );
    return this.cancelled;
  }

  /** Ends the execution as continued by `successorId`, whatever the flow does next. */
  continueAs(successorId: string): void {
    this.continuedTo = successorId;
  }

  /**
   * The reason to stop for a journal failure: a stale fence or a taken sequence means another
   * writer took the execution over (`OWNERSHIP_LOST`); any other error stops it as it is (a
   * `LoomError`) or as a `STORE_FAILURE`. Once stopped, the first reason stays the reason.
   */
  stopReason(error: unknown): LoomError {
    if (this.stopped !== undefined) return this.stopped;
    return isLoomError(error, ErrorCode.FENCE_STALE) ||
      isLoomError(error, ErrorCode.SEQUENCE_CONFLICT)
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
  }

  /** Throws if the execution must not go on (stopped, cancelled, continued, or a rule broken). */
  interrupt(): void {
    const interruption = this.interruption();
    if (interruption !== undefined) throw interruption;
  }

  /**
   * Why the execution must not go on (see {@link interrupt}): a `LoomError`, or the unwind of a
   * continue-as-new; undefined when it may.
   */
  private interruption(): LoomError | FlowUnwind | undefined {
    if (this.stopped !== undefined) return this.stopped;
    if (this.fatal !== undefined) return this.fatal;
    if (this.cancelled !== undefined) return this.cancelled;
    if (this.continuedTo !== undefined) return continuedAsNew(this.executionId, this.continuedTo);
    return undefined;
  }

  /**
   * Claims the next operation index for `name` of `kind`, checking the log's record there.
   * Step names are unique per execution; other kinds share the index but not the name check.
   * Throws `INVALID_STEP_NAME`, `DUPLICATE_STEP_NAME`, `NON_DETERMINISM`, or why the execution
   * must not go on.
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

  /**
   * `ctx.now()`, `random()`, `uuid()` (`name`): the logged value on replay; otherwise `make()`'s,
   * checked (a clock that gives NaN is refused here, not by the append, which would wedge the
   * execution) and queued as `value.recorded`. Once suspending, `make()`'s, unrecorded: the flow
   * never gets past its next operation.
   */
  recordValue(name: string, make: () => JsonValue): JsonValue {
    if (this.suspended) return make();
    const claim = this.claim('value', name);
    if (claim.recorded !== undefined) return claim.recorded.result ?? null;
    const payload = { index: claim.index, name: claim.name, value: make() };
    const text = encodeRecorded(payload, `the value of ctx.${name}()`, {
      executionId: this.executionId,
    });
    const value = recordedValue(payload.value, text, 'value');
    this.record(EventType.valueRecorded, payload, text);
    this.state.steps[claim.index] = {
      kind: 'value',
      name: claim.name,
      status: 'completed',
      result: value,
    };
    return value;
  }

  /**
   * `ctx.patched(id)`: true for executions that reach this point under code that has the patch
   * (new ones, and old ones that had not got this far; the marker is queued), false when the log
   * went on past this point without the marker (the execution ran the old code). Once
   * suspending, true and unrecorded.
   */
  patched(id: unknown): boolean {
    if (this.suspended) return true;
    this.interrupt();
    const name = checkStepName(id, this.executionId);
    const recorded = this.state.steps[this.cursor];
    if (recorded?.kind === 'patch' && recorded.name === name) {
      this.cursor++;
      return true;
    }
    if (recorded !== undefined) return false;
    const index = this.cursor++;
    this.record(EventType.patchMarked, { index, name }, undefined);
    this.state.steps[index] = { kind: 'patch', name, status: 'completed' };
    return true;
  }

  /**
   * A step's outcome recorded while another effect of the execution still runs (parallel steps)
   * goes in this turn's write instead of waiting for the next barrier: a crash inside the other
   * effect must not cost an outcome that had returned, which would run its effect again (for an
   * agent's tool, ask a person about a call that had finished). The flow gets the result without
   * waiting for the write: the journal appends in order, so any later barrier covers it. A lone
   * step's outcome still waits for the next barrier, so a sequential flow keeps its n + 1 appends
   * (ADR 0045).
   */
  flushBesideOthers(): void {
    if (this.inFlight > 1) this.enqueue(FLUSH_SOON, undefined, undefined, undefined);
  }

  /**
   * The terminal of a flow that returned `output`: completed, unless the execution must not go
   * on or the log holds operations the flow never asked for (`NON_DETERMINISM`). Undefined when
   * this node stopped driving (nothing more is recorded).
   */
  returned(output: unknown): Terminal | undefined {
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
      const payload = { output: (output ?? null) as JsonValue };
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
      return this.threw(thrown);
    }
  }

  /**
   * The terminal of a flow that threw `thrown` or was interrupted: continued, cancelled or failed
   * (with the broken rule, if any, over what it threw). Undefined when this node stopped driving.
   */
  threw(thrown: unknown): Terminal | undefined {
    if (this.stopped !== undefined) return undefined;
    const { continuedTo, cancelReason, fatal } = this;
    return terminalFor(thrown, { continuedTo, cancelReason, fatal });
  }

  /** True when commands are queued (the shell drains them after each call that may queue). */
  get pending(): boolean {
    return this.queueLength > 0;
  }

  /** Hands the queued commands to `sink`, in order, and empties the queue. */
  drain(sink: CommandSink): void {
    // A command carried out may call the machine again (an effect run on `runEffect` that asks
    // for `ctx.now()`): what that queues goes behind the commands being carried out, and its own
    // drain returns at once; this loop carries it out next, in order.
    if (this.draining || this.queueLength === 0) return;
    this.draining = true;
    const queue = this.queue;
    try {
      for (let at = 0; at < this.queueLength; at += STRIDE) {
        const kind = queue[at];
        const first = queue[at + 1];
        const second = queue[at + 2];
        const third = queue[at + 3];
        // Not kept alive by the queue until the next command overwrites them.
        queue[at + 1] = undefined;
        queue[at + 2] = undefined;
        queue[at + 3] = undefined;
        if (kind === APPEND) {
          sink.record(first as KernelEventType, second as JsonValue, third as string | undefined);
        } else if (kind === STATUS) {
          sink.setStatus(
            'suspended',
            second as number | null,
            third as number | undefined,
            first as number,
          );
        } else if (kind === FLUSH_SOON) {
          sink.flushSoon();
        } else if (kind === BARRIER) {
          sink.barrier(first as number);
        } else if (kind === RUN_EFFECT) {
          sink.runEffect(first as number, second as number);
        } else if (kind === RUN_TRANSACTION) {
          sink.runTransaction(first as number);
        } else if (kind === ARM_TIMER) {
          sink.armTimer(first as number, second as number);
        } else if (kind === COMPLETE) {
          sink.complete(first as number, second);
        } else if (kind === READ_INBOX) {
          sink.readInbox(first as number, second as number);
        } else if (kind === START_CHILD) {
          sink.startChild(first as number, second as string, third as JsonValue);
        } else if (kind === LOOKUP_CHILD) {
          sink.lookupChild(first as number, second as string);
        } else if (kind === START_SUCCESSOR) {
          sink.startSuccessor(first as number, second as string, third as JsonValue);
        } else if (kind === ACQUIRE_LANE) {
          sink.acquireLane(first as number);
        } else if (kind === RELEASE_LANE) {
          sink.releaseLane(first as number);
        } else {
          sink.failOperation(first as number, second);
        }
      }
    } finally {
      this.queueLength = 0;
      this.draining = false;
    }
  }

  private enqueue(kind: number, first: unknown, second: unknown, third: unknown): void {
    const queue = this.queue;
    const at = this.queueLength;
    queue[at] = kind;
    queue[at + 1] = first;
    queue[at + 2] = second;
    queue[at + 3] = third;
    this.queueLength = at + STRIDE;
  }

  /** Queues `type` to be recorded (`payloadText`: the payload as the log must store it). */
  record(type: KernelEventType, payload: JsonValue, payloadText: string | undefined): void {
    this.nextSequence++;
    this.enqueue(APPEND, type, payload, payloadText);
  }

  /**
   * An append the journal made outside the queue (a transaction's `step.completed`, committed
   * with the work): the next queued append's sequence moves past it.
   */
  appendedOutside(): void {
    this.nextSequence++;
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
}

function describe(kind: OperationKind, name: string): string {
  return kind === 'step' ? `'${name}'` : `${kind} '${name}'`;
}
