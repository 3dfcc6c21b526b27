import { hostname } from 'node:os';
import { type Clock, systemClock } from '../clock.js';
import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import { checkLeaseOwner } from '../internal/lease-input.js';
import { mintId } from '../internal/mint-id.js';
import { checkExecutionId } from '../internal/prepare-append.js';
import { Limits } from '../limits.js';
import { encodeRecorded, recordedValue } from './driver-support.js';
import {
  createHandle,
  type ExecutionHandle,
  type OutcomeSource,
  settledOutcome,
} from './execution-handle.js';
import { ExecutionLinks, type StartLinks } from './execution-links.js';
import { ExecutionRecovery } from './execution-recovery.js';
import type { ExecutionState } from './execution-state.js';
import type { Flow } from './flow.js';
import { FlowRegistry } from './flow-registry.js';
import type { ExecutionStartedPayload } from './kernel-events.js';
import { LeaseManager } from './lease-manager.js';
import { loadState } from './load-state.js';
import { LocalExecutions } from './local-executions.js';
import { notFound } from './not-found.js';
import { every, keepAliveUntil } from './pollers.js';
import { cancelRemotely } from './remote-cancel.js';
import {
  type RuntimeOptions,
  type RuntimeSettings,
  resolveOptions,
  type StartOptions,
} from './runtime-options.js';

export type { ExecutionHandle } from './execution-handle.js';
export type { LeaseMode, RuntimeOptions, StartOptions } from './runtime-options.js';

/** What `execution.cancelled` records when `cancel()` was given no reason. */
export const defaultCancelReason = 'cancelled without a reason';

/**
 * The kernel's runtime: starts, resumes, cancels and recovers durable executions on one node.
 * See `createRuntime`.
 */
export class Runtime {
  readonly nodeId: string;
  /** The event log this runtime drives. */
  readonly store: EventStore;
  private readonly clock: Clock;
  private readonly flows = new FlowRegistry();
  private readonly leases: LeaseManager | undefined;
  private shuttingDown = false;
  private readonly pollers: Array<() => void> = [];
  private readonly outcomes: OutcomeSource;
  private readonly links: ExecutionLinks;
  private readonly local: LocalExecutions;
  private readonly recovery: ExecutionRecovery;

  constructor(private readonly options: RuntimeOptions) {
    const settings = resolveOptions(options);
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.nodeId =
      options.nodeId === undefined
        ? `${hostname()}-${process.pid}-${mintId()}`
        : checkLeaseOwner(options.nodeId, 'nodeId');
    const report = (error: unknown) => this.options.onError?.(error);
    this.outcomes = {
      store: this.store,
      get snapshots() {
        return options.snapshots;
      },
      localDriver: (executionId) => this.local.driver(executionId),
      clock: this.clock,
      storeRetry: settings.storeRetry,
    };
    this.links = new ExecutionLinks({
      store: this.store,
      startLinked: (flow, input, executionId, links) =>
        this.startExecution(flow, input, executionId, links),
      settledOutcome: (executionId) => settledOutcome(this.outcomes, executionId),
      resume: (executionId) => this.resume(executionId),
      cancel: (executionId, reason) => this.cancel(executionId, reason),
      wakeDue: () => this.wakeDue(),
      pollsTimers: () => settings.timerPollMs > 0,
      shuttingDown: () => this.shuttingDown,
      onError: report,
    });
    this.leases = this.startLeases(settings, report);
    const { store, clock, leases, links, flows } = this;
    const { leaseMode } = settings;
    const { storeRetry } = settings;
    this.local = new LocalExecutions({
      store,
      clock,
      options,
      leases,
      leaseMode,
      links,
      flows,
      storeRetry,
    });
    this.recovery = new ExecutionRecovery({
      store,
      clock,
      recoverQuietMs: settings.recoverQuietMs,
      leaseOf: (executionId) => this.options.leases?.get(executionId),
      isDriving: (executionId) => this.local.has(executionId),
      acquireLeases: (executionIds) =>
        this.leases?.acquireAll(executionIds) ?? Promise.resolve(new Set(executionIds)),
      releaseLease: (executionId) => this.leases?.release(executionId),
      resume: (executionId) => this.resume(executionId),
      onError: report,
    });
    for (const flow of options.flows ?? []) this.register(flow);
    this.pollers.push(
      every(settings.timerPollMs, () => this.wakeDue().catch(report)),
      every(settings.recoverEveryMs, () => this.recover().catch(report)),
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
    this.flows.register(flow);
  }

  /** Executions this node is driving right now. */
  get activeExecutions(): string[] {
    return this.local.ids;
  }

  /**
   * Start an execution of `flow`. Resolves once sequence 0 is durable. With a caller-chosen id
   * that already exists, no effect runs and the handle follows the existing execution.
   *
   * Error codes: `PAYLOAD_NOT_JSON` / `LIMIT_EXCEEDED` (input), `INVALID_FLOW`,
   * `INVALID_ENVELOPE` (id), `RUNTIME_SHUT_DOWN`, and store errors, among them
   * `STORE_UNAVAILABLE` / `STORE_BUSY` when the first append failed: the execution may still
   * have been written (its acknowledgement lost); if it was, this runtime drives it anyway, and
   * starting again with the same `executionId` returns its handle.
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
    this.flows.registerIfAbsent(typedFlow);
    const executionId = requestedId === undefined ? mintId() : checkExecutionId(requestedId);
    // The flow runs on the input decoded from what the log stores, as a replay will. (The
    // append checks the whole started event; this names the input when it alone is too big.)
    const checked = { input: input ?? null };
    const text = encodeRecorded(checked, `the input of execution ${executionId}`, { executionId });
    const started: ExecutionStartedPayload = {
      flow: typedFlow.name,
      version: typedFlow.version ?? null,
      input: recordedValue(checked.input, text, 'input'),
      ...links,
    };
    const existing = await this.local.start(typedFlow, executionId, started);
    return this.handle<O>(executionId, existing);
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
    await this.local.resume(executionId);
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
   * had already settled. `reason` is optional: without one, `execution.cancelled` records
   * {@link defaultCancelReason}.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `INVALID_ENVELOPE` (id), `INVALID_ARGUMENT` (a reason
   * that is not a string), `LIMIT_EXCEEDED` (a reason over `Limits.cancelReasonLengthMax`),
   * store errors.
   *
   * @example
   * await runtime.cancel('order-42', 'customer asked');
   */
  async cancel(executionId: string, reason: string = defaultCancelReason): Promise<boolean> {
    checkExecutionId(executionId);
    if (typeof reason !== 'string') {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `a cancel reason must be a string (or left out), got ${typeof reason}`,
        { executionId, path: 'reason' },
      );
    }
    if (reason.length > Limits.cancelReasonLengthMax) {
      throw new LoomError(
        ErrorCode.LIMIT_EXCEEDED,
        `the cancel reason for execution ${executionId} is ${reason.length} characters, over ` +
          `cancelReasonLengthMax (${Limits.cancelReasonLengthMax}): shorten it (keep details elsewhere)`,
        { executionId, path: 'reason', limit: 'cancelReasonLengthMax', actual: reason.length },
      );
    }
    const local = this.local.driver(executionId);
    if (local !== undefined) {
      local.cancel(reason);
      const outcome = await local.done;
      // Stopped, or suspending when the cancel came: the log is idle now, cancel it there.
      if (outcome.status !== 'stopped' && outcome.status !== 'suspended') {
        return outcome.status === 'cancelled';
      }
    }
    return cancelRemotely(
      {
        store: this.store,
        snapshots: this.options.snapshots,
        clock: this.clock,
        cancelChildren: (state, why) => this.links.cancelChildren(state, why),
      },
      executionId,
      reason,
    );
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
    return this.recovery.wakeDue(limit);
  }

  /**
   * Resume running executions nobody drives: their lease expired, or they never leased and their
   * log has been quiet for `recoverQuietMs`. Call it on boot and periodically. Returns the ids
   * this node resumed (the fence settles races between nodes).
   */
  async recover(): Promise<string[]> {
    this.assertRunning();
    return this.recovery.recover();
  }

  /**
   * Stop driving: make what was recorded durable, stop every execution at its next barrier,
   * wait for them, release leases. Executions stay in the log for recovery.
   */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const stop of this.pollers) stop();
    await this.local.stopAll(
      (executionId) =>
        new LoomError(ErrorCode.RUNTIME_SHUT_DOWN, `the runtime on ${this.nodeId} shut down`, {
          executionId,
        }),
    );
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
    return keepAliveUntil(() => this.shuttingDown);
  }

  /** Wait for background work (snapshots, lease releases) to finish. For tests. */
  async idle(): Promise<void> {
    return this.local.idle();
  }

  private startLeases(
    settings: RuntimeSettings,
    report: (error: unknown) => void,
  ): LeaseManager | undefined {
    if (this.options.leases === undefined || settings.leaseMode === 'off') return undefined;
    const leases = new LeaseManager({
      store: this.options.leases,
      nodeId: this.nodeId,
      clock: this.clock,
      ttlMs: settings.leaseTtlMs,
      renewEveryMs: settings.renewEveryMs,
      lazyGraceMs: settings.lazyGraceMs,
      onLost: (ids) => this.leasesLost(ids),
      onError: report,
    });
    leases.start();
    return leases;
  }

  private leasesLost(executionIds: string[]): void {
    for (const executionId of executionIds) {
      this.local
        .driver(executionId)
        ?.stop(
          new LoomError(
            ErrorCode.OWNERSHIP_LOST,
            `node ${this.nodeId} lost the lease on execution ${executionId}; it stops driving it`,
            { executionId },
          ),
        );
    }
  }

  private handle<O>(executionId: string, existing: boolean): ExecutionHandle<O> {
    return createHandle<O>(this.outcomes, executionId, existing);
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
