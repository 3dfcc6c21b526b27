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
import { EventType } from './kernel-events.js';
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
  private readonly store: EventStore;
  private readonly clock: Clock;
  private readonly flows = new Map<string, Flow<never, unknown>>();
  private readonly running = new Map<string, Running>();
  private readonly leases: LeaseManager | undefined;
  private readonly leaseMode: LeaseMode;
  private readonly recoverQuietMs: number;
  private readonly background = new Set<Promise<unknown>>();
  private shuttingDown = false;

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
    this.assertRunning();
    const typedFlow = flow as unknown as Flow<never, unknown>;
    checkFlow(typedFlow);
    const key = flowKey(flow.name, flow.version ?? null);
    if (!this.flows.has(key)) this.flows.set(key, typedFlow);
    const executionId =
      options.executionId === undefined ? ulid() : checkExecutionId(options.executionId);
    const inputValue = (input === undefined ? null : input) as JsonValue;
    encodePayload(inputValue, executionId);
    if (this.running.has(executionId)) return this.handle<O>(executionId, true);
    if (this.leaseMode === 'eager' && !(await this.leases?.acquire(executionId))) {
      return this.handle<O>(executionId, true);
    }
    const started = { flow: flow.name, version: flow.version ?? null, input: inputValue };
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
    if (this.leaseMode === 'lazy' && this.running.has(executionId))
      this.leases?.acquireLater(executionId);
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
    this.drive(flow, state, journal, loaded.snapshotSequence ?? -1);
    return this.handle<O>(executionId, true);
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
    for (let attempt = 0; attempt < 5; attempt++) {
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
      ...(isTransactional(this.store)
        ? {
            transact: (j, work, completion) =>
              j.transact(this.store as never, work, completion as never),
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
    const { executionId } = running.driver;
    if (this.running.get(executionId) === running) this.running.delete(executionId);
    if (outcome.status !== 'stopped') this.maybeSnapshot(running);
    this.leases?.release(executionId);
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
    const local = this.running.get(executionId);
    if (local !== undefined) {
      const outcome = await local.driver.done;
      if (outcome.status !== 'stopped' || isLoomError(outcome.error, ErrorCode.RUNTIME_SHUT_DOWN)) {
        return resultOf(executionId, outcome) as O;
      }
    }
    return resultOf(executionId, await this.followLog(executionId)) as O;
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

function flowKey(name: string, version: string | null): string {
  return version === null ? name : `${name}@${version}`;
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
