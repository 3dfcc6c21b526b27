import type { Clock } from '../clock.js';
import type { JsonValue } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import { checkExecutionId } from '../internal/prepare-append.js';
import { Limits } from '../limits.js';
import type { ExecutionState } from './core/execution-state.js';
import type { RetryOptions } from './core/kernel-events.js';
import { createHandle, type ExecutionHandle } from './execution-handle.js';
import type { Flow } from './flow.js';
import { Kernel } from './kernel-node.js';
import { loadState } from './load-state.js';
import { notFound } from './not-found.js';
import { every, keepAlive } from './pollers.js';
import type { RuntimeEvents } from './runtime-events.js';
import { type HealthOptions, probeHealth, type RuntimeHealth } from './runtime-health.js';
import type { KernelRuntimeOptions, StartOptions } from './runtime-options.js';

export type { ExecutionHandle } from './execution-handle.js';
export type { KernelRuntimeOptions, LeaseMode, StartOptions } from './runtime-options.js';

/**
 * The key under which a runtime built on a {@link KernelRuntime} (the flow runtime of
 * `@loom/workflow-runtime`) exposes it, so `/testing` helpers reach the kernel of either.
 */
export const kernelRuntimeSlot: unique symbol = Symbol.for('@loom/event-runtime/kernel-runtime');

/** A runtime that carries a {@link KernelRuntime} under {@link kernelRuntimeSlot}. */
export interface HasKernelRuntime {
  readonly [kernelRuntimeSlot]: KernelRuntime;
}

const kernels = new WeakMap<KernelRuntime, Kernel>();

/** The kernel context of a runtime (or of the kernel runtime it carries). For `/testing`. */
export function kernelOf(runtime: KernelRuntime | HasKernelRuntime): Kernel {
  const kernelRuntime = kernelRuntimeSlot in runtime ? runtime[kernelRuntimeSlot] : runtime;
  const kernel = kernels.get(kernelRuntime as KernelRuntime);
  if (kernel === undefined) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      'not a Loom runtime: pass what createRuntime returned',
    );
  }
  return kernel;
}

/** What `execution.cancelled` records when `cancel()` was given no reason. */
export const defaultCancelReason = 'cancelled without a reason';

/**
 * The kernel's runtime: starts, resumes, cancels and recovers durable executions on one node.
 * An advanced export (`@loom/event-runtime/kernel`): flow authors use `createRuntime` of
 * `@loom/workflow-runtime`, which is built on it. See `createKernelRuntime`.
 */
export class KernelRuntime {
  readonly nodeId: string;
  /** The event log this runtime drives. */
  readonly store: EventStore;
  /** The runtime's clock: every timer of the runtime (and of what runs on it) is armed here. */
  readonly clock: Clock;
  private readonly kernel: Kernel;
  private readonly pollers: Array<() => void> = [];
  private readonly serving: Array<() => void> = [];

  constructor(options: KernelRuntimeOptions) {
    this.kernel = new Kernel(options);
    const { kernel } = this;
    kernels.set(this, kernel);
    this.nodeId = kernel.nodeId;
    this.store = kernel.store;
    this.clock = kernel.clock;
    for (const flow of options.flows ?? []) this.register(flow);
    kernel.leases?.start();
    const report = (error: unknown) => kernel.report(error);
    this.pollers.push(
      every(kernel.clock, kernel.settings.timerPollMs, () => this.wakeDue().catch(report)),
      every(kernel.clock, kernel.settings.recoverEveryMs, () => this.recover().catch(report)),
    );
    // The boot round: what a crashed incarnation of this node left is resumed at once.
    if (kernel.settings.recoverEveryMs > 0) void this.recover().catch(report);
  }

  /**
   * What this runtime tells its observers: leases acquired, renewed and lost, executions resumed
   * and recovered, timers fired, background store errors. See `RuntimeEventMap`.
   *
   * @example
   * runtime.events.on('lease:lost', (event) => console.warn(`lost ${event.executionId}`));
   */
  get events(): RuntimeEvents {
    return this.kernel.events;
  }

  /** Make a flow resumable by name (and version). Throws `INVALID_FLOW`. */
  register(flow: Flow<never, unknown>): void {
    this.kernel.flows.register(flow);
  }

  /**
   * Leave the executions of a flow (name and version) this runtime knows but must not run to
   * other nodes: recovery rounds here skip them (no lease taken, no `FLOW_NOT_REGISTERED`
   * reported). `@loom/workflow-runtime` calls it for a flow whose placement this node does not
   * fit. `register` of the flow undoes it.
   */
  declineFlow(name: string, version: string | null = null): void {
    this.kernel.flows.decline(name, version);
  }

  /**
   * True while this node's claim on its id is lost (`node:claim_lost`) and not yet made again:
   * others read it as dead, so it takes no new work. Queue workers skip their claims meanwhile.
   */
  get claimLost(): boolean {
    return this.kernel.presence?.lost === true;
  }

  /**
   * Whether this node can do its work now, for an orchestrator's readiness probe (and a worker's
   * `/readyz`): reads one absent execution from the event store within `timeoutMs` (default
   * 5,000 ms) and reports that with the node claim's state; `ready` is true when the store
   * answered, the claim is not lost and the runtime is not shutting down. A store that cannot be
   * reached is an answer (`ready: false`, `store.error`), never a throw. Error codes:
   * `INVALID_ARGUMENT` (timeoutMs). ADR 0055.
   */
  health(options?: HealthOptions): Promise<RuntimeHealth> {
    return probeHealth(this.kernel, options);
  }

  /** Executions this node is driving right now. */
  get activeExecutions(): string[] {
    return this.kernel.executions.ids;
  }

  /**
   * Start an execution of `flow`. The code that runs is the flow registered here under
   * `flow`'s name and version when there is one (the code a resume of the execution runs), not
   * necessarily the object given; `flow` is registered when none is. Resolves once sequence 0 is
   * durable. With a caller-chosen id
   * that already exists, no effect runs and the handle follows the existing execution; one that
   * another `start()` on this runtime is still writing resolves once that write is durable too
   * (and, if that start failed, starts the execution itself).
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
    const { executionId, existing } = await this.kernel.executions.launch(
      flow as unknown as Flow<never, unknown>,
      input,
      options.executionId,
      {},
    );
    return this.handle<O>(executionId, existing);
  }

  /**
   * Resume an execution from its log on this node (after a crash, or to take it over). Takes the
   * lease first (eagerly), then advances the fence, then replays.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `FLOW_NOT_REGISTERED`, `RUNTIME_SHUT_DOWN`, store errors.
   */
  async resume<O = unknown>(executionId: string): Promise<ExecutionHandle<O>> {
    this.kernel.assertRunning();
    checkExecutionId(executionId);
    await this.kernel.executions.resume(executionId);
    this.kernel.events.emit('execution:resumed', {
      nodeId: this.nodeId,
      executionId,
      cause: 'resume',
    });
    return this.handle<O>(executionId, true);
  }

  /**
   * Retry a failed execution from its failed step, on this node: `execution.retried` is appended
   * after its `execution.failed` (behind the fence, so two retries cannot both reopen it), the
   * flow replays its completed steps without running them, and the step whose failure failed the
   * execution runs again with a fresh attempt budget. Deploy the fix first: the flow replays
   * under the code registered here. Resolves with a handle once the retry is durable. With
   * `handOffStarts`, nothing runs here and no flow need be registered: the retry is written with
   * the execution due, and the first node whose timer poll takes it replays it. `options.by` and
   * `options.reason` (who asked, and why) are recorded in the `execution.retried` event.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_NOT_FAILED` (it runs, completed, was cancelled
   * or continued; `fields.status`), `FLOW_NOT_REGISTERED`, `INVALID_ENVELOPE` (id),
   * `RUNTIME_SHUT_DOWN`, `STORE_BUSY`, store errors.
   *
   * @example
   * const failed = await runtime.retry('order-42', { by: 'ana', reason: 'deployed the fix' });
   * console.log(await failed.result());
   */
  async retry<O = unknown>(
    executionId: string,
    options: RetryOptions = {},
  ): Promise<ExecutionHandle<O>> {
    this.kernel.assertRunning();
    checkExecutionId(executionId);
    await this.kernel.executions.retry(executionId, options);
    return this.handle<O>(executionId, true);
  }

  /**
   * Where an execution stands, from its log: `running` (or suspended), or how it settled.
   * Throws `EXECUTION_NOT_FOUND`.
   */
  async status(executionId: string): Promise<ExecutionState['status']> {
    checkExecutionId(executionId);
    const { state } = await loadState(this.store, this.kernel.snapshots, executionId);
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
    return this.kernel.executions.cancel(executionId, reason);
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
  async wakeDue(limit?: number): Promise<string[]> {
    this.kernel.assertRunning();
    return this.kernel.recovery.wakeDue(limit);
  }

  /**
   * Resume running executions nobody drives: at once when their owner is known dead (its node
   * claim is gone, or it was an earlier incarnation of this node id, or, unleased, no other node
   * is alive); otherwise once their lease expired, or, never leased, once their log has been
   * quiet for `recoverQuietMs`. The runtime runs it as it starts and every `recoverEveryMs`;
   * calling it waits for a round in progress and returns what both resumed. Returns the ids this
   * node resumed (the fence settles races between nodes).
   */
  async recover(): Promise<string[]> {
    this.kernel.assertRunning();
    return this.kernel.recovery.recover();
  }

  /**
   * Stop driving: make what was recorded durable, stop every execution at its next barrier,
   * wait for them, release leases. Executions stay in the log for recovery.
   */
  async shutdown(): Promise<void> {
    if (!this.kernel.beginShutdown()) return;
    for (const stop of this.pollers) stop();
    // A recovery round in flight (the boot round) finishes first, so what it resumed is stopped
    // below with the rest rather than left running after shutdown.
    this.kernel.recovery.stop();
    await this.kernel.recovery.settle();
    await this.kernel.executions.stopAll(
      (executionId) =>
        new LoomError(ErrorCode.RUNTIME_SHUT_DOWN, `the runtime on ${this.nodeId} shut down`, {
          executionId,
        }),
    );
    await this.kernel.leases?.shutdown();
    await this.kernel.presence?.release().catch((error) => this.kernel.report(error));
    for (const served of this.serving.splice(0)) served();
  }

  /**
   * Keep this process alive (its own timers never do) while the runtime polls timers, recovers
   * and drives executions, until `shutdown()`. For a dedicated worker process.
   *
   * @example
   * const runtime = createKernelRuntime({ store, flows, recoverEveryMs: 10_000 });
   * await runtime.recover();
   * await runtime.serve(); // returns after runtime.shutdown()
   */
  serve(): Promise<void> {
    this.kernel.assertRunning();
    const release = keepAlive(this.clock);
    return new Promise((resolve) => {
      this.serving.push(() => {
        release();
        resolve();
      });
    });
  }

  /** Wait for background work (snapshots, lease releases) to finish. For tests. */
  async idle(): Promise<void> {
    return this.kernel.executions.idle();
  }

  private handle<O>(executionId: string, existing: boolean): ExecutionHandle<O> {
    return createHandle<O>(this.kernel, executionId, existing);
  }
}

/**
 * Create a kernel runtime over a store: hand-written `Flow` objects, no schemas, no cron, no
 * queues. An advanced export for packages built on the kernel and for its own tests; a flow
 * author uses `createRuntime` of `@loom/workflow-runtime`. Throws `INVALID_ARGUMENT` for bad
 * options.
 *
 * @example
 * const runtime = createKernelRuntime({ store: SqliteEventStore.open({ path: 'loom.db', migrate: true }) });
 * const handle = await runtime.start({ name: 'hello', run: async (ctx) => ctx.step('greet', () => 'hi') }, null);
 * console.log(await handle.result()); // 'hi'
 */
export function createKernelRuntime(options: KernelRuntimeOptions): KernelRuntime {
  return new KernelRuntime(options);
}
