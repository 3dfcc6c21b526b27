import { hostname } from 'node:os';
import { ulid } from 'ulid';
import { type Clock, systemClock } from '../clock.js';
import type { JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import { type EventStore, isTransactional } from '../event-store.js';
import { encodePayload } from '../internal/json-codec.js';
import { checkExecutionId } from '../internal/prepare-append.js';
import type { LeaseStore } from '../lease-store.js';
import type { SnapshotStore } from '../snapshot-store.js';
import { ExecutionDriver } from './execution-driver.js';
import { ExecutionJournal } from './execution-journal.js';
import { type ExecutionOutcome, outcomeOfState, resultOf } from './execution-outcome.js';
import { type ExecutionState, foldEvent, initialState, isSettled } from './execution-state.js';
import { checkFlow, type Flow } from './flow.js';
import { EventType, type ExecutionStartedPayload } from './kernel-events.js';
import { LeaseManager } from './lease-manager.js';
import { loadState } from './load-state.js';

/** How a runtime takes leases: not at all, before every first append, or only for long runs. */
export type LeaseMode = 'off' | 'eager' | 'lazy';

export interface RuntimeOptions {
  store: EventStore;
  /** Without a lease store the runtime takes no leases (one process per log). */
  leases?: LeaseStore;
  /** Default `lazy` when `leases` is given. */
  leaseMode?: LeaseMode;
  /** Default 30,000 ms. */
  leaseTtlMs?: number;
  /** Default ttl/3. */
  renewEveryMs?: number;
  /** Lazy mode: how long a fresh start drives before it takes a lease. Default ttl/3. */
  lazyGraceMs?: number;
  /**
   * Recovery resumes an unleased running execution only after its log has been quiet this long.
   * Default ttl + lazyGraceMs: longer than a lazy start can go without a lease.
   */
  recoverQuietMs?: number;
  snapshots?: SnapshotStore;
  /** Checkpoint state every N events (and at settle when the tail reached N). Needs `snapshots`. */
  snapshotEvery?: number;
  clock?: Clock;
  /** This node's name in leases. Default `<hostname>-<pid>-<ulid>`. */
  nodeId?: string;
  /** Flows this runtime can resume by name. `start` registers its flow too. */
  flows?: ReadonlyArray<Flow<never, unknown>>;
  /** Background failures (lease renewals, snapshots) are reported here. Default: ignored. */
  onError?: (error: unknown) => void;
  /**
   * How often this node claims due suspended executions (timers, signals) and resumes them.
   * Default 1,000 ms; 0 = never (call `wakeDue()` yourself).
   */
  timerPollMs?: number;
  /** How often this node runs `recover()`. Default 0 = only when you call it (e.g. on boot). */
  recoverEveryMs?: number;
  /**
   * A timer due within this many ms is waited for in memory instead of suspending the
   * execution. Default 1,000; 0 = always suspend.
   */
  inlineWaitMs?: number;
}

export interface StartOptions {
  /** Caller-chosen id: starting it again returns a handle to the existing execution. */
  executionId?: string;
}

/** A way to wait for an execution's outcome, wherever it runs. */
export interface ExecutionHandle<O = unknown> {
  readonly executionId: string;
  /** True when `start` found the execution already in the log (or already running here). */
  readonly existing: boolean;
  /**
   * The flow's output once the execution completes. Rejects with `EXECUTION_FAILED` (or the
   * kernel code the failure recorded, e.g. `NON_DETERMINISM`), `EXECUTION_CANCELLED`, or
   * `RUNTIME_SHUT_DOWN`.
   */
  result(): Promise<O>;
}

/** How a new execution is linked to others: its parent, or its continue-as-new predecessor. */
type StartLinks = Pick<
  ExecutionStartedPayload,
  'parent' | 'continuedFrom' | 'rootId' | 'generation'
>;

interface Running {
  driver: ExecutionDriver;
  lastSnapshotSequence: number;
  savingSnapshot: boolean;
}

/**
 * The kernel's runtime: starts, resumes, cancels and recovers durable executions on one node.
 * See `createRuntime`.
 */
export class Runtime {
  readonly nodeId: string;
  /** The event log this runtime drives. */
  readonly store: EventStore;
  private readonly clock: Clock;
  private readonly flows = new Map<string, Flow<never, unknown>>();
  private readonly running = new Map<string, Running>();
  private readonly leases: LeaseManager | undefined;
  private readonly leaseMode: LeaseMode;
  private readonly recoverQuietMs: number;
  private readonly background = new Set<Promise<unknown>>();
  private shuttingDown = false;
  private readonly timerPollMs: number;
  private readonly pollers: Array<() => void> = [];

  constructor(private readonly options: RuntimeOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.nodeId = options.nodeId ?? `${hostname()}-${process.pid}-${ulid()}`;
    const ttlMs = options.leaseTtlMs ?? 30_000;
    const lazyGraceMs = options.lazyGraceMs ?? Math.floor(ttlMs / 3);
    this.recoverQuietMs = options.recoverQuietMs ?? ttlMs + lazyGraceMs;
    this.leaseMode = options.leases === undefined ? 'off' : (options.leaseMode ?? 'lazy');
    if (
      options.snapshotEvery !== undefined &&
      (!Number.isSafeInteger(options.snapshotEvery) || options.snapshotEvery < 1)
    ) {
      throw new LoomError(ErrorCode.INVALID_ARGUMENT, 'snapshotEvery must be a positive integer', {
        actual: options.snapshotEvery,
      });
    }
    if (options.leases !== undefined && this.leaseMode !== 'off') {
      this.leases = new LeaseManager({
        store: options.leases,
        nodeId: this.nodeId,
        clock: this.clock,
        ttlMs,
        renewEveryMs: options.renewEveryMs ?? Math.floor(ttlMs / 3),
        lazyGraceMs,
        onLost: (ids) => this.leasesLost(ids),
        onError: (error) => this.options.onError?.(error),
      });
      this.leases.start();
    }
    for (const flow of options.flows ?? []) this.register(flow);
    this.timerPollMs = options.timerPollMs ?? 1_000;
    const report = (error: unknown) => this.options.onError?.(error);
    this.pollers.push(
      every(this.timerPollMs, () => this.wakeDue().catch(report)),
      every(options.recoverEveryMs ?? 0, () => this.recover().catch(report)),
    );
  }

  /** Lease calls made so far (acquireMany, renewMany, releaseMany), for tests and benchmarks. */
  get leaseCalls(): Readonly<{ acquireMany: number; renewMany: number; releaseMany: number }> {
    return this.leases?.calls ?? { acquireMany: 0, renewMany: 0, releaseMany: 0 };
  }

  /** Run one lease renewal round now (the timer does it every renewEveryMs). */
  tickLeases(): Promise<void> {
    return this.leases?.tick() ?? Promise.resolve();
  }

  /** Make a flow resumable by name (and version). Throws `INVALID_FLOW`. */
  register(flow: Flow<never, unknown>): void {
    checkFlow(flow);
    this.flows.set(flowKey(flow.name, flow.version ?? null), flow);
  }

  /** Executions this node is driving right now. */
  get activeExecutions(): string[] {
    return [...this.running.keys()];
  }

  /**
   * Start an execution of `flow`. Resolves once sequence 0 is durable. With a caller-chosen id
   * that already exists, no effect runs and the handle follows the existing execution.
   *
   * Error codes: `PAYLOAD_NOT_JSON` / `LIMIT_EXCEEDED` (input), `INVALID_FLOW`,
   * `INVALID_ENVELOPE` (id), `RUNTIME_SHUT_DOWN`, and store errors.
   *
   * @example
   * const handle = await runtime.start(orderFlow, { sku: 'loom-1' }, { executionId: 'order-42' });
   * console.log(await handle.result());
   */
  async start<I, O>(
    flow: Flow<I, O>,
    input: I,
    options: StartOptions = {},
  ): Promise<ExecutionHandle<O>> {
    return this.startExecution(
      flow as unknown as Flow<never, unknown>,
      input,
      options.executionId,
      {},
    );
  }

  private async startExecution<O>(
    typedFlow: Flow<never, unknown>,
    input: unknown,
    requestedId: string | undefined,
    links: StartLinks,
  ): Promise<ExecutionHandle<O>> {
    this.assertRunning();
    checkFlow(typedFlow);
    const key = flowKey(typedFlow.name, typedFlow.version ?? null);
    if (!this.flows.has(key)) this.flows.set(key, typedFlow);
    const executionId = requestedId === undefined ? ulid() : checkExecutionId(requestedId);
    const inputValue = (input === undefined ? null : input) as JsonValue;
    encodePayload(inputValue, executionId);
    if (this.running.has(executionId)) return this.handle<O>(executionId, true);
    const eager = this.leaseMode === 'eager' || links.continuedFrom !== undefined;
    if (eager && this.leases !== undefined && !(await this.leases.acquire(executionId))) {
      return this.handle<O>(executionId, true);
    }
    const started: ExecutionStartedPayload = {
      flow: typedFlow.name,
      version: typedFlow.version ?? null,
      input: inputValue,
      ...links,
    };
    const journal = new ExecutionJournal(this.store, executionId, 0, 0, this.clock);
    journal.record(EventType.executionStarted, started as unknown as JsonValue);
    journal.setStatus('running');
    const durable = journal.flush();
    this.drive(typedFlow, initialState(executionId, started), journal, -1);
    try {
      await durable;
    } catch (error) {
      if (
        isLoomError(error, ErrorCode.EXECUTION_ALREADY_STARTED) ||
        isLoomError(error, ErrorCode.FENCE_STALE)
      ) {
        await this.running.get(executionId)?.driver.done;
        return this.handle<O>(executionId, true);
      }
      throw error;
    }
    if (this.leaseMode === 'lazy' && !eager && this.running.has(executionId)) {
      this.leases?.acquireLater(executionId);
    }
    return this.handle<O>(executionId, false);
  }

  /**
   * Resume an execution from its log on this node (after a crash, or to take it over). Takes the
   * lease first (eagerly), then advances the fence, then replays.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `FLOW_NOT_REGISTERED`, `RUNTIME_SHUT_DOWN`, store errors.
   */
  async resume<O = unknown>(executionId: string): Promise<ExecutionHandle<O>> {
    this.assertRunning();
    checkExecutionId(executionId);
    if (this.running.has(executionId)) return this.handle<O>(executionId, true);
    const loaded = await loadState(this.store, this.options.snapshots, executionId);
    const state = loaded.state;
    if (state === undefined) throw notFound(executionId);
    if (isSettled(state)) return this.handle<O>(executionId, true);
    const flow = this.flowFor(state);
    if (this.leases !== undefined && !(await this.leases.acquire(executionId))) {
      return this.handle<O>(executionId, true);
    }
    const epoch = await this.store.fences.advance(executionId);
    // Read what a previous owner appended before the fence moved: after it, nobody else can.
    for (const event of await this.readTail(executionId, state.nextSequence))
      foldEvent(state, event);
    if (isSettled(state) || this.running.has(executionId)) {
      this.leases?.release(executionId);
      return this.handle<O>(executionId, true);
    }
    const journal = new ExecutionJournal(
      this.store,
      executionId,
      state.nextSequence,
      epoch,
      this.clock,
    );
    // A suspended execution woken by hand (not claimed) is running again from its next append.
    journal.setStatus('running');
    this.drive(flow, state, journal, loaded.snapshotSequence ?? -1);
    return this.handle<O>(executionId, true);
  }

  /**
   * Where an execution stands, from its log: `running` (or suspended), or how it settled.
   * Throws `EXECUTION_NOT_FOUND`.
   */
  async status(executionId: string): Promise<ExecutionState['status']> {
    checkExecutionId(executionId);
    const { state } = await loadState(this.store, this.options.snapshots, executionId);
    if (state === undefined) throw notFound(executionId);
    return state.status;
  }

  /** A handle on an execution without driving it (it may run on another node). */
  attach<O = unknown>(executionId: string): ExecutionHandle<O> {
    checkExecutionId(executionId);
    return this.handle<O>(executionId, true);
  }

  /**
   * Cancel an execution. Here: it ends at its next barrier. Elsewhere: this node takes the fence
   * and appends `execution.cancelled`, so the owner's next append is refused. Returns false if it
   * had already settled.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, store errors.
   */
  async cancel(executionId: string, reason: string): Promise<boolean> {
    checkExecutionId(executionId);
    const local = this.running.get(executionId);
    if (local !== undefined) {
      local.driver.cancel(reason);
      const outcome = await local.driver.done;
      if (outcome.status !== 'stopped') return outcome.status === 'cancelled';
    }
    for (let attempt = 0; attempt < cancelAttemptsMax; attempt++) {
      const { state } = await loadState(this.store, this.options.snapshots, executionId);
      if (state === undefined) throw notFound(executionId);
      if (isSettled(state)) return false;
      const epoch = await this.store.fences.advance(executionId);
      for (const event of await this.readTail(executionId, state.nextSequence))
        foldEvent(state, event);
      if (isSettled(state)) return false;
      try {
        await this.store.append(
          [
            {
              executionId,
              sequence: state.nextSequence,
              type: EventType.executionCancelled,
              payload: { reason },
              at: this.clock.now(),
            },
          ],
          { fenceEpoch: epoch, status: 'settled' },
        );
        await this.cancelChildren(state, reason);
        return true;
      } catch (error) {
        if (
          !isLoomError(error, ErrorCode.SEQUENCE_CONFLICT) &&
          !isLoomError(error, ErrorCode.FENCE_STALE)
        )
          throw error;
      }
    }
    throw new LoomError(
      ErrorCode.STORE_BUSY,
      `could not cancel ${executionId}: its log kept moving`,
      {
        executionId,
      },
    );
  }

  /** Cancels the running children of a cancelled parent (and theirs, recursively). */
  private async cancelChildren(parent: ExecutionState, reason: string): Promise<void> {
    const children = parent.steps.filter(
      (record) => record.kind === 'child' && record.status === 'started',
    );
    for (const child of children) {
      if (child.childId === undefined) continue;
      try {
        await this.cancel(child.childId, `parent ${parent.executionId} was cancelled: ${reason}`);
      } catch (error) {
        if (!isLoomError(error, ErrorCode.EXECUTION_NOT_FOUND)) this.options.onError?.(error);
      }
    }
  }

  /**
   * Send a signal to an execution, from any process: it is kept in the execution's inbox, and a
   * suspended execution becomes due at once, so the next timer poll of any node running that flow
   * wakes it (the sender does not claim it: a short-lived sender would strand it). A repeated
   * `idempotencyKey` is delivered once.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_SETTLED`, `INVALID_ENVELOPE`,
   * `PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`, store errors.
   */
  async signal(
    executionId: string,
    name: string,
    payload: unknown,
    options: { idempotencyKey?: string } = {},
  ): Promise<{ signalId: number; duplicate: boolean }> {
    const sent = await this.store.sendSignal({
      executionId,
      name,
      payload: (payload === undefined ? null : payload) as JsonValue,
      ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
    });
    return sent;
  }

  /**
   * Claim suspended executions whose timer is due (or that got a signal) and resume them here.
   * The timer service calls it every `timerPollMs`; of several nodes, exactly one claims each.
   * Returns the ids resumed.
   */
  async wakeDue(limit = 100): Promise<string[]> {
    this.assertRunning();
    const claimed = await this.store.claimDue(this.clock.now(), limit);
    const resumed: string[] = [];
    for (const executionId of claimed) {
      try {
        await this.resume(executionId);
        resumed.push(executionId);
      } catch (error) {
        this.options.onError?.(error);
      }
    }
    return resumed;
  }

  /**
   * Resume running executions nobody drives: their lease expired, or they never leased and their
   * log has been quiet for `recoverQuietMs`. Call it on boot and periodically. Returns the ids
   * this node resumed (the fence settles races between nodes).
   */
  async recover(): Promise<string[]> {
    this.assertRunning();
    const resumed: string[] = [];
    const nowMs = this.clock.now();
    let after = '';
    for (;;) {
      const page = await this.store.findExecutions({
        status: 'running',
        afterExecutionId: after,
        limit: 500,
      });
      if (page.length === 0) break;
      after = page[page.length - 1]?.executionId as string;
      for (const summary of page) {
        if (this.running.has(summary.executionId)) continue;
        const lease = await this.options.leases?.get(summary.executionId);
        if (lease !== undefined && lease.expiresAtMs > nowMs) continue;
        if (lease === undefined && summary.lastEventAt > nowMs - this.recoverQuietMs) continue;
        try {
          await this.resume(summary.executionId);
          if (this.running.has(summary.executionId)) resumed.push(summary.executionId);
        } catch (error) {
          this.options.onError?.(error);
        }
      }
    }
    return resumed;
  }

  /**
   * Stop driving: make what was recorded durable, stop every execution at its next barrier,
   * wait for them, release leases. Executions stay in the log for recovery.
   */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const stop of this.pollers) stop();
    const stopping = [...this.running.values()].map(async ({ driver }) => {
      driver.stop(
        new LoomError(ErrorCode.RUNTIME_SHUT_DOWN, `the runtime on ${this.nodeId} shut down`, {
          executionId: driver.executionId,
        }),
      );
      await driver.journal.flush().catch(() => undefined);
      await driver.done;
    });
    await Promise.all(stopping);
    await Promise.all([...this.background]);
    await this.leases?.shutdown();
  }

  /**
   * Keep this process alive (its own timers never do) while the runtime polls timers, recovers
   * and drives executions, until `shutdown()`. For a dedicated worker process.
   *
   * @example
   * const runtime = createRuntime({ store, flows, recoverEveryMs: 10_000 });
   * await runtime.recover();
   * await runtime.serve(); // returns after runtime.shutdown()
   */
  serve(): Promise<void> {
    this.assertRunning();
    return new Promise((resolve) => {
      const keepAlive = setInterval(() => {
        if (!this.shuttingDown) return;
        clearInterval(keepAlive);
        resolve();
      }, 100);
    });
  }

  /** Wait for background work (snapshots, lease releases) to finish. For tests. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  private drive(
    flow: Flow<never, unknown>,
    state: ExecutionState,
    journal: ExecutionJournal,
    snapshotSequence: number,
  ): void {
    const driver = new ExecutionDriver(state, journal, {
      clock: this.clock,
      keepResults: this.options.snapshots !== undefined && this.options.snapshotEvery !== undefined,
      inlineWaitMs: this.options.inlineWaitMs ?? 1_000,
      readSignals: (executionId, afterSignalId) =>
        this.store.readSignals(executionId, { afterSignalId }),
      startChild: async (childFlow, input, childId, parent) => {
        await this.startExecution(childFlow, input, childId, { parent });
      },
      childOutcome: (childId) => this.settledOutcome(childId),
      startSuccessor: async (successorFlow, input, successorId, predecessor) => {
        const links: StartLinks = {
          continuedFrom: predecessor.executionId,
          rootId: predecessor.rootId,
          generation: predecessor.generation + 1,
        };
        if (predecessor.parent !== undefined) links.parent = predecessor.parent;
        await this.startExecution(successorFlow, input, successorId, links);
      },
      ...(isTransactional(this.store)
        ? {
            transact: (
              j: ExecutionJournal,
              work: (tx: unknown) => unknown,
              completion: (result: unknown) => { type: string; payload: JsonValue },
            ) => j.transact(this.store as never, work, completion as never),
          }
        : {}),
    });
    const running: Running = {
      driver,
      lastSnapshotSequence: snapshotSequence,
      savingSnapshot: false,
    };
    this.running.set(state.executionId, running);
    journal.onAppended = () => this.maybeSnapshot(running);
    void driver.run(flow).then((outcome) => this.settled(running, outcome));
  }

  private settled(running: Running, outcome: ExecutionOutcome): void {
    const { executionId, state } = running.driver;
    if (this.running.get(executionId) === running) this.running.delete(executionId);
    if (outcome.status !== 'stopped') this.maybeSnapshot(running);
    this.leases?.release(executionId);
    const ended =
      outcome.status === 'completed' ||
      outcome.status === 'failed' ||
      outcome.status === 'cancelled';
    if (ended && state.parent !== undefined) {
      this.track(this.notifyParent(state.parent.executionId, executionId));
    }
    if (outcome.status === 'cancelled') this.track(this.cancelChildren(state, outcome.reason));
    if (outcome.status === 'suspended') this.track(this.wakeIfSignalled(running));
  }

  /** Wakes a parent waiting in `ctx.child` (the parent reads the outcome from the child's log). */
  private async notifyParent(parentId: string, childId: string): Promise<void> {
    try {
      await this.store.sendSignal({
        executionId: parentId,
        name: childSignalName,
        payload: { childId },
      });
    } catch (error) {
      if (!isLoomError(error, ErrorCode.EXECUTION_SETTLED)) this.options.onError?.(error);
      return;
    }
    if (this.timerPollMs > 0 && !this.shuttingDown) await this.wakeDue().catch(() => undefined);
  }

  /**
   * A signal (or a child's end) that came after the driver looked but before its suspension was
   * durable found the execution still running and set no wake time: look once more now.
   */
  private async wakeIfSignalled(running: Running): Promise<void> {
    const { state } = running.driver;
    const waiting = state.steps.filter((record) => record.status === 'started');
    const names = new Set(
      waiting.filter((record) => record.kind === 'signal').map((record) => record.name),
    );
    let due = false;
    if (names.size > 0) {
      const consumed = new Set(state.consumedSignals);
      const inbox = await this.store.readSignals(state.executionId);
      due = inbox.some((signal) => names.has(signal.name) && !consumed.has(signal.signalId));
    }
    for (const record of waiting) {
      if (due || record.kind !== 'child' || record.childId === undefined) continue;
      due = (await this.settledOutcome(record.childId)) !== undefined;
    }
    if (due && !this.shuttingDown) {
      await this.resume(state.executionId).catch((error) => this.options.onError?.(error));
    }
  }

  private maybeSnapshot(running: Running): void {
    const every = this.options.snapshotEvery;
    const snapshots = this.options.snapshots;
    if (every === undefined || snapshots === undefined || running.savingSnapshot) return;
    const { driver } = running;
    if (!driver.journal.idle) return;
    const sequence = driver.journal.sequence - 1;
    // Every N events while running, and at settle when the tail since the last one reached N.
    if (sequence - running.lastSnapshotSequence < every) return;
    const state = structuredClone(driver.state);
    state.nextSequence = sequence + 1;
    running.savingSnapshot = true;
    running.lastSnapshotSequence = sequence;
    this.track(
      snapshots
        .save({
          executionId: driver.executionId,
          sequence,
          state: state as unknown as JsonValue,
          at: this.clock.now(),
        })
        .catch((error) => this.options.onError?.(error))
        .finally(() => {
          running.savingSnapshot = false;
        }),
    );
  }

  private track(work: Promise<unknown>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  private leasesLost(executionIds: string[]): void {
    for (const executionId of executionIds) {
      this.running
        .get(executionId)
        ?.driver.stop(
          new LoomError(
            ErrorCode.OWNERSHIP_LOST,
            `node ${this.nodeId} lost the lease on execution ${executionId}; it stops driving it`,
            { executionId },
          ),
        );
    }
  }

  private flowFor(state: ExecutionState): Flow<never, unknown> {
    const flow = this.flows.get(flowKey(state.flow, state.version));
    if (flow === undefined) {
      throw new LoomError(
        ErrorCode.FLOW_NOT_REGISTERED,
        `execution ${state.executionId} runs flow '${state.flow}'${state.version === null ? '' : ` version ${state.version}`}, ` +
          'which this runtime has not registered: register that flow (and version) before resuming',
        { executionId: state.executionId, flow: state.flow, version: state.version },
      );
    }
    return flow;
  }

  private async readTail(executionId: string, fromSequence: number): Promise<StoredEvent[]> {
    return this.store.read(executionId, { fromSequence });
  }

  private handle<O>(executionId: string, existing: boolean): ExecutionHandle<O> {
    let result: Promise<O> | undefined;
    return {
      executionId,
      existing,
      result: () => {
        result ??= this.awaitResult<O>(executionId);
        return result;
      },
    };
  }

  private async awaitResult<O>(executionId: string): Promise<O> {
    // Someone waits for this outcome (perhaps a sleeping execution's): keep the process alive
    // until it arrives, as an open server would. The runtime's own pollers never do.
    const keepAlive = setInterval(() => undefined, 2 ** 30);
    try {
      let current = executionId;
      for (let hops = 0; ; hops++) {
        const outcome = await this.outcomeOf(current);
        if (outcome.status !== 'continued') return resultOf(current, outcome) as O;
        if (hops >= continuedHopsMax) throw notFound(outcome.successorId);
        current = outcome.successorId;
      }
    } finally {
      clearInterval(keepAlive);
    }
  }

  /** The execution's outcome: from the local driver, else by following its log. */
  private async outcomeOf(executionId: string): Promise<ExecutionOutcome> {
    const local = this.running.get(executionId);
    if (local !== undefined) {
      const outcome = await local.driver.done;
      const final = outcome.status !== 'stopped' && outcome.status !== 'suspended';
      const shutDown =
        outcome.status === 'stopped' && isLoomError(outcome.error, ErrorCode.RUNTIME_SHUT_DOWN);
      if (final || shutDown) return outcome;
    }
    return this.followLog(executionId);
  }

  /** The outcome of a settled execution (following continue-as-new), or undefined if it runs. */
  private async settledOutcome(executionId: string): Promise<ExecutionOutcome | undefined> {
    let current = executionId;
    for (let hops = 0; hops < continuedHopsMax; hops++) {
      const { state } = await loadState(this.store, this.options.snapshots, current);
      const outcome = state === undefined ? undefined : outcomeOfState(state);
      if (outcome?.status !== 'continued') return outcome;
      current = outcome.successorId;
    }
    return undefined;
  }

  /** Waits for the execution's terminal event in the log, wherever it is driven. */
  private async followLog(executionId: string): Promise<ExecutionOutcome> {
    const { state } = await loadState(this.store, this.options.snapshots, executionId);
    if (state === undefined) throw notFound(executionId);
    const settledNow = outcomeOfState(state);
    if (settledNow !== undefined) return settledNow;
    return new Promise<ExecutionOutcome>((resolve, reject) => {
      const subscription = this.store.subscribe(
        {
          executionId,
          fromSequence: state.nextSequence,
          onError: reject,
        },
        (events) => {
          for (const event of events) foldEvent(state, event);
          const outcome = outcomeOfState(state);
          if (outcome !== undefined) {
            void subscription.close();
            resolve(outcome);
          }
        },
      );
    });
  }

  private assertRunning(): void {
    if (this.shuttingDown) {
      throw new LoomError(
        ErrorCode.RUNTIME_SHUT_DOWN,
        `the runtime on ${this.nodeId} is shut down`,
      );
    }
  }
}

/** The signal a settled child sends its parent (the parent reads the outcome from the child's log). */
const childSignalName = 'loom.child.settled';
/** Continue-as-new chains followed by `result()` before giving up (a runaway chain is a bug). */
const continuedHopsMax = 10_000;
/** Attempts of a remote cancel while the execution's log keeps moving. */
const cancelAttemptsMax = 5;

function flowKey(name: string, version: string | null): string {
  return version === null ? name : `${name}@${version}`;
}

/** Runs `work` every `ms` (never overlapping itself) until the returned stop is called; 0 = never. */
function every(ms: number, work: () => Promise<unknown>): () => void {
  if (ms <= 0) return () => undefined;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void work().finally(() => {
      running = false;
    });
  }, ms);
  timer.unref();
  return () => clearInterval(timer);
}

function notFound(executionId: string): LoomError {
  return new LoomError(ErrorCode.EXECUTION_NOT_FOUND, `no execution ${executionId} in the log`, {
    executionId,
  });
}

/**
 * Create a runtime over a store.
 *
 * @example
 * const runtime = createRuntime({ store: SqliteEventStore.open({ path: 'loom.db', migrate: true }) });
 * const handle = await runtime.start({ name: 'hello', run: async (ctx) => ctx.step('greet', () => 'hi') }, null);
 * console.log(await handle.result()); // 'hi'
 */
export function createRuntime(options: RuntimeOptions): Runtime {
  return new Runtime(options);
}
