import type {
  Backend,
  Clock,
  EnqueueResult,
  EventStore,
  ExecutionHandle,
  ExecutionState,
  FlowKey,
  HealthOptions,
  JsonValue,
  LeaseStore,
  ListQueuesOptions,
  LiveStore,
  PruneReport,
  QueueStats,
  QueueStore,
  RetryOptions,
  RuntimeEvents,
  RuntimeHealth,
  SnapshotStore,
  StartOptions,
  StepRetryPolicy,
} from '@loom/event-runtime';
import { ErrorCode as KernelErrorCode } from '@loom/event-runtime';
import {
  createKernelRuntime,
  type KernelRuntime,
  type KernelRuntimeOptions,
  kernelRuntimeSlot,
} from '@loom/event-runtime/kernel';
import { isLoomError, LoomError, WorkflowErrorCode } from '../errors.js';
import { checkTags, tagsSatisfy } from '../placement/placement.js';
import {
  type CronScheduleInput,
  cronScheduleFlow,
  type ScheduleOptions,
  scheduleInput,
} from './cron-schedule.js';
import type { SignalSchemas, WorkflowDefinition } from './define-flow.js';
import type { QueryDefinition } from './define-query.js';
import { isSignalDefinition, type SignalDefinition } from './define-signal.js';
import type { UpdateDefinition } from './define-update.js';
import { type EventDispatchDeps, eventDispatchFlow } from './event-dispatch.js';
import { eventWaitFlow, legacyEventWaitFlow } from './event-wait.js';
import {
  type ExecutionQueryHost,
  queryExecution,
  type UpdateOptions,
  updateExecution,
} from './execution-queries.js';
import {
  type FindFlowExecutionsOptions,
  type FlowExecutionPage,
  findFlowExecutions,
} from './find-executions.js';
import { debounceOf } from './flow-debounce.js';
import { idempotencyOf } from './flow-idempotency.js';
import { singletonOf } from './flow-singleton.js';
import { flowControlNameOf, throttleOf } from './flow-throttle.js';
import { pruneRuns, type RuntimePruneOptions } from './prune-runs.js';
import {
  eventDeliveryVersion,
  eventDispatchFlowName,
  eventsQueue,
  type PublishEventInput,
  type PublishResult,
  publishedEvent,
} from './published-event.js';
import {
  type EnqueueOptions,
  type QueueWorker,
  QueueWorkerLoop,
  type WorkOptions,
} from './queue-worker.js';
import { ScheduleChain, type ScheduleDescription } from './schedule-chain.js';
import { singletonCancelPrefix, supersedeOlder } from './singleton-cancel.js';
import { type InferInput, type StandardSchemaV1, validate } from './standard-schema.js';
import { stopOnTerminal } from './workflow-context.js';

/** What every {@link RuntimeOptions} has: the flows, and the kernel's timing and lease settings. */
export interface RuntimeSettingsOptions
  extends Omit<KernelRuntimeOptions, 'flows' | 'store' | 'leases' | 'snapshots' | 'stepRetry'> {
  /** Every flow this process can run or resume (by name and version). */
  flows?: ReadonlyArray<WorkflowDefinition<never, unknown>>;
  /**
   * The retry policy of every step that sets none (a step's own `retry` overrides it; `retry:
   * false` turns it off for that step). Retries are durable, and a `terminalError()` is never
   * retried. Default: one attempt.
   */
  stepRetry?: StepRetryPolicy;
  /**
   * This node's capabilities (`gpu`, `region:eu`): it starts, resumes, recovers and retries only
   * executions of flows whose `placement.tags` it carries all of (`loom worker --tags gpu,eu`
   * passes them here). Default none: only flows without a placement. See ADR 0038.
   */
  tags?: readonly string[];
  /**
   * How this runtime delivers published events when it registers a flow with a `trigger`: a
   * worker of the `loom.events` queue that claims the events of the names its flows are
   * triggered by (`pollMs`, default 1,000 ms: how soon an event published by another process is
   * seen; `claimTtlMs`, `workerConcurrencyMax` as for `work`). `false`: this runtime delivers
   * none (another process does). Default: on.
   */
  eventDelivery?: false | Pick<WorkOptions, 'pollMs' | 'claimTtlMs' | 'workerConcurrencyMax'>;
}

/**
 * A runtime on a backend opened by one call (`openMemory()`, `openSqlite({ path })`,
 * `openPostgres({ connectionString, schema })`): the log, leases, snapshots and queues all come
 * from it.
 */
export interface RuntimeOnBackend {
  backend: Backend;
  /**
   * `shutdown()` closes the backend after the runtime stopped driving (default true): pass
   * false when other runtimes or code share it and you close it yourself.
   */
  closeBackend?: boolean;
  store?: never;
  leases?: never;
  snapshots?: never;
  queues?: never;
  live?: never;
}

/** A runtime on stores handed one by one (advanced: mixing backends, decorated stores). */
export interface RuntimeOnStores {
  backend?: never;
  closeBackend?: never;
  /** The event log. */
  store: EventStore;
  /** Without a lease store the runtime takes no leases (one process per log). */
  leases?: LeaseStore;
  /** Checkpoints of long executions (with `snapshotEvery`). */
  snapshots?: SnapshotStore;
  /**
   * Durable queues for `enqueue` and `work`. Without them those (and `queueStats`, `listQueues`)
   * throw `QUEUE_STORE_MISSING`.
   */
  queues?: QueueStore;
  /**
   * The live channel beside the log (ADR 0050), for code above the runtime that streams text
   * across processes (`@loom/agent-loop`). The runtime itself never touches it.
   */
  live?: LiveStore;
}

/**
 * Options of {@link createRuntime}: a `backend` (what `openSqlite` and co. return) or the stores
 * one by one, plus the flows and settings. With a backend, the runtime takes leases (`lazy`
 * unless `leaseMode` says otherwise) and snapshots only when `snapshotEvery` is set.
 */
export type RuntimeOptions = RuntimeSettingsOptions & (RuntimeOnBackend | RuntimeOnStores);

type AnyFlow = WorkflowDefinition<unknown, unknown>;

/** Options of `runtime.signal`. */
export interface SignalOptions {
  /** A second signal with the same key for the same execution is a no-op (delivered once). */
  idempotencyKey?: string;
}

/** What `runtime.signal` returns: the inbox id, and whether the idempotency key was seen before. */
export interface SignalSent {
  signalId: number;
  duplicate: boolean;
}

/**
 * The one runtime a flow author creates: it starts, signals, cancels and lists executions of
 * `defineFlow` flows (inputs and signal payloads are checked by their schemas before anything is
 * written), runs cron schedules and durable queues, drives executions on this node (timer polls,
 * recovery, leases) and tells observers what happens (`events`). Built on the kernel runtime of
 * `@loom/event-runtime/kernel`, which it keeps to itself.
 *
 * @example
 * const runtime = createRuntime({ backend: openMemory(), flows: [order] });
 * await runtime.recover();
 * const handle = await runtime.start(order, { sku: 'loom-1' }, { executionId: 'order-42' });
 * console.log(await handle.result());
 * await runtime.shutdown();
 */
export class Runtime {
  /** The queue store of `enqueue` and `work`, if the runtime has one. */
  readonly queues: QueueStore | undefined;
  /**
   * The backend's live channel (ADR 0050; or the `live` store handed in), if it has one: what
   * `@loom/agent-loop` streams a model's text through, so followers in any process get it.
   */
  readonly live: LiveStore | undefined;
  /** This node's tags (`RuntimeOptions.tags`): the flow placements it may run. */
  readonly tags: readonly string[];
  /** The kernel runtime underneath, for the `/testing` helpers of `@loom/event-runtime` (`leaseCalls`, `tickLeases`). */
  readonly [kernelRuntimeSlot]: KernelRuntime;
  private readonly kernel: KernelRuntime;
  private readonly registry = new Map<string, AnyFlow>();
  private readonly onError: (error: unknown) => void;
  private readonly schedules: ScheduleChain;
  private readonly ownedBackend: Backend | undefined;
  private readonly workers = new Set<QueueWorkerLoop>();
  /** The snapshot store, checkpointing or not: `prune` reads parents through it and forgets. */
  private readonly snapshotStore: SnapshotStore | undefined;
  private readonly eventDelivery: RuntimeSettingsOptions['eventDelivery'];
  /** Event names this runtime delivers (a flow registered here is triggered by each). */
  private readonly eventNames = new Set<string>();
  /** The worker of the `loom.events` queue, once a triggered flow is registered. */
  private eventWorker: QueueWorkerLoop | undefined;
  private shuttingDown = false;

  /** Throws `INVALID_ARGUMENT` for bad options (see `createRuntime`). */
  constructor(options: RuntimeOptions) {
    const { flows, backend, closeBackend, store, leases, snapshots, queues, live, ...settings } =
      options as RuntimeSettingsOptions & {
        live?: LiveStore;
        backend?: Backend;
        closeBackend?: boolean;
        store?: EventStore;
        leases?: LeaseStore;
        snapshots?: SnapshotStore;
        queues?: QueueStore;
      };
    const { stepRetry, tags, eventDelivery, ...kernelSettings } = settings;
    this.eventDelivery = eventDelivery ?? {};
    this.tags = checkTags(tags ?? [], 'tags');
    const log = backend?.events ?? store;
    if (log === undefined) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        'createRuntime needs a backend (openMemory(), openSqlite({ path }), openPostgres({ connectionString })) or a store',
        { path: 'backend' },
      );
    }
    const leaseStore = backend?.leases ?? leases;
    const snapshotStore = backend?.snapshots ?? snapshots;
    this.snapshotStore = snapshotStore;
    this.queues = backend?.queues ?? queues;
    this.live = backend?.live ?? live;
    this.ownedBackend = backend !== undefined && closeBackend !== false ? backend : undefined;
    this.onError = options.onError ?? (() => undefined);
    this.kernel = createKernelRuntime({
      ...kernelSettings,
      ...(stepRetry === undefined ? {} : { stepRetry: stopOnTerminal(stepRetry) }),
      store: log,
      ...(leaseStore === undefined ? {} : { leases: leaseStore }),
      // An unused snapshot store would still cost a read per resume: only when checkpointing.
      ...(snapshotStore === undefined ||
      (backend !== undefined && settings.snapshotEvery === undefined)
        ? {}
        : { snapshots: snapshotStore }),
    });
    this[kernelRuntimeSlot] = this.kernel;
    const scheduleFlow = cronScheduleFlow(this.kernel, (name, version) =>
      this.lookup(name, version),
    );
    this.register(scheduleFlow as never);
    this.register(legacyEventWaitFlow as never);
    this.register(
      eventWaitFlow({
        store: this.kernel.store,
        signal: (executionId, name, payload, options) =>
          this.kernel.signal(executionId, name, payload, options),
      }) as never,
    );
    this.schedules = new ScheduleChain(this.kernel, () => scheduleFlow);
    for (const flow of flows ?? []) this.register(flow);
  }

  /** This node's name in leases and queue claims. */
  get nodeId(): string {
    return this.kernel.nodeId;
  }

  /** The event log this runtime drives (read it for audits and tools; never append to it). */
  get store(): EventStore {
    return this.kernel.store;
  }

  /** The runtime's clock: every timer of the runtime and of what runs on it is armed here. */
  get clock(): Clock {
    return this.kernel.clock;
  }

  /**
   * What this runtime tells its observers, typed (see `RuntimeEventMap`): `lease:acquired`,
   * `lease:renewed`, `lease:lost`, `execution:resumed`, `execution:recovered`, `timer:fired`,
   * `store:error`. A listener that throws never disturbs the runtime (its error goes to
   * `onError`).
   *
   * @example
   * runtime.events.on('lease:lost', (event) => console.warn(`${event.executionId} moved away`));
   */
  get events(): RuntimeEvents {
    return this.kernel.events;
  }

  /** Executions this node is driving right now. */
  get activeExecutions(): string[] {
    return this.kernel.activeExecutions;
  }

  /**
   * Whether this node can do its work now, for an orchestrator's readiness probe: one read of
   * the store within `timeoutMs` (default 5,000 ms) and the node claim's state. `ready` is true
   * when the store answered, the node's claim on its id is not lost and the runtime is not
   * shutting down. An unreachable store is an answer (`ready: false` with `store.error`), never
   * a throw. Error codes: `INVALID_ARGUMENT` (timeoutMs).
   *
   * @example
   * const { ready, store } = await runtime.health();
   * if (!ready) console.warn('not ready:', store.error?.message);
   */
  health(options?: HealthOptions): Promise<RuntimeHealth> {
    return this.kernel.health(options);
  }

  /**
   * Make a flow runnable and resumable here. A flow whose `placement.tags` this node lacks is
   * known (its signals are typed and checked, it can be enqueued) but never driven here: the
   * kernel does not get it, so recovery and timers here leave its executions to a node that fits.
   */
  register(flow: WorkflowDefinition<never, unknown>): void {
    this.registry.set(key(flow.name, flow.version ?? null), flow as unknown as AnyFlow);
    if (this.placeable(flow)) this.kernel.register(flow);
    else this.kernel.declineFlow(flow.name, flow.version ?? null);
    const options = (flow as Partial<WorkflowDefinition<never, unknown>>).options;
    if (options === undefined || !this.placeable(flow)) return;
    // Whoever runs a flow delivers the events that start, cancel or wake it (ADR 0060).
    if (options.trigger !== undefined) this.deliverEventsOf(options.trigger.event);
    for (const entry of options.cancelOn ?? []) this.deliverEventsOf(entry.event);
    for (const name of options.waitsForEvents ?? []) this.deliverEventsOf(name);
  }

  /**
   * Deliver events named `eventName` from here: register their dispatch flow (so this runtime's
   * events worker claims them) and start that worker if it is not running yet.
   */
  private deliverEventsOf(eventName: string): void {
    if (this.eventNames.has(eventName)) return;
    this.eventNames.add(eventName);
    const deps: EventDispatchDeps = {
      kernel: this.kernel,
      subscribers: (name) => this.subscribers(name),
      cancellable: (name) => this.cancellable(name),
      waits: {
        store: this.kernel.store,
        signal: (executionId, name, payload, options) =>
          this.kernel.signal(executionId, name, payload, options),
        cancel: (executionId, reason) => this.kernel.cancel(executionId, reason),
      },
      onError: this.onError,
    };
    // The current version, and the unversioned one for events published by older nodes.
    for (const version of [eventDeliveryVersion, null]) {
      this.register(eventDispatchFlow(eventName, deps, version) as never);
    }
    if (
      this.eventWorker === undefined &&
      this.eventDelivery !== false &&
      this.queues !== undefined &&
      !this.shuttingDown
    ) {
      this.eventWorker = this.work(eventsQueue, this.eventDelivery ?? {}) as QueueWorkerLoop;
    }
  }

  /** The flows registered here, placeable here, that events named `eventName` start. */
  private subscribers(eventName: string): AnyFlow[] {
    const flows: AnyFlow[] = [];
    for (const flow of this.registry.values()) {
      if (flow.options?.trigger?.event === eventName && this.placeable(flow as never)) {
        flows.push(flow);
      }
    }
    return flows;
  }

  /** The flows registered here, placeable here, that events named `eventName` may cancel. */
  private cancellable(eventName: string): AnyFlow[] {
    return [...this.registry.values()].filter(
      (flow) =>
        flow.options?.cancelOn?.some((entry) => entry.event === eventName) === true &&
        this.placeable(flow as never),
    );
  }

  /**
   * Publish an event: it is stored (in the `loom.events` queue) before this returns, and every
   * flow whose `trigger` names it (and whose `if` accepts it) is started once, as
   * `event:<len>:<flow>:<key>` (`eventRunId`: the trigger's `idempotency(event)`, else the event's id), by a runtime
   * that registers those flows: this one at once if it does, else whichever takes it first, also
   * one started after the publish (the event waits). An id published before (any name) is a
   * no-op: `duplicate: true`, nothing written, nothing started.
   *
   * Error codes: `QUEUE_STORE_MISSING`, `INVALID_ARGUMENT` (a bad name or id), the queue
   * store's (`PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`, store errors).
   *
   * @example
   * await runtime.publish({ name: 'shop/order.placed', data: { orderId: 'o-7' }, id: 'o-7-placed' });
   */
  async publish<D = JsonValue>(event: PublishEventInput<D>): Promise<PublishResult> {
    const queues = this.requireQueues('publish');
    const published = publishedEvent(event as PublishEventInput<unknown>, this.kernel.clock.now());
    const { duplicate } = await queues.enqueue({
      queue: eventsQueue,
      itemId: published.id,
      flow: eventDispatchFlowName(published.name),
      version: eventDeliveryVersion,
      input: published as unknown as JsonValue,
    });
    if (!duplicate) this.eventWorker?.poke();
    return { id: published.id, duplicate };
  }

  /** True when this node carries every tag of the flow's placement. */
  private placeable(flow: WorkflowDefinition<never, unknown>): boolean {
    return tagsSatisfy(this.tags, placementTags(flow));
  }

  /** Throws `PLACEMENT_UNSATISFIED` when `flow` may not run on this node. */
  private assertPlaceable(
    flow: WorkflowDefinition<never, unknown>,
    operation: string,
    executionId?: string,
  ): void {
    if (this.placeable(flow)) return;
    const need = placementTags(flow);
    throw new LoomError(
      WorkflowErrorCode.PLACEMENT_UNSATISFIED,
      `flow '${flow.name}' runs only on nodes tagged [${need.join(', ')}], and this runtime has ` +
        `[${this.tags.join(', ')}]: ${operation} it on a node with those tags (or enqueue it to a ` +
        'queue such a node works); nothing was written',
      { flow: flow.name, tags: [...need], ...(executionId === undefined ? {} : { executionId }) },
    );
  }

  /**
   * Start an execution after validating `input` against the flow's schema (nothing is written
   * if it fails: `INVALID_INPUT` naming the issues). Idempotent on a caller-chosen id. The body
   * that runs is the flow registered under `flow`'s name and version (the one a resume runs),
   * registered from `flow` when none is: another definition of the same name and version (built
   * again, with other closures) does not replace it; `register` it, or give it a new version. A flow
   * that declares `concurrency`, `throttle`, `singleton`, `idempotency` or `debounce` is refused with
   * `FLOW_CONTROL_NEEDS_QUEUE` (it holds only for queued runs: `enqueue` it).
   */
  async start<I, O>(
    flow: WorkflowDefinition<I, O>,
    input: I,
    options: StartOptions = {},
  ): Promise<ExecutionHandle<O>> {
    const control = flowControlNameOf(flow.options);
    if (control !== undefined) {
      throw new LoomError(
        WorkflowErrorCode.FLOW_CONTROL_NEEDS_QUEUE,
        `flow '${flow.name}' declares a per-key ${control}, which holds only for runs a ` +
          'queue admits: runtime.enqueue(queue, flow, input) it and runtime.work(queue)',
        { flow: flow.name },
      );
    }
    if (!this.registry.has(key(flow.name, flow.version ?? null))) this.register(flow as never);
    this.assertPlaceable(flow as never, 'start', options.executionId);
    let value: unknown = input;
    if (flow.options.input !== undefined) {
      const checked = await validate(flow.options.input, input);
      if (!checked.ok) {
        throw new LoomError(
          WorkflowErrorCode.INVALID_INPUT,
          `input of flow '${flow.name}' refused by its schema: ${checked.message}`,
          {
            flow: flow.name,
            issues: checked.issues,
          },
        );
      }
      value = checked.value;
    }
    return this.kernel.start(flow, value as I, options);
  }

  /**
   * Send a signal, typed by the flow that waits for it: `name` must be one of the flow's declared
   * `signals` and `payload` its schema's input type (a misspelt name is a compile error). The
   * payload is validated by that schema and the execution must run that flow (checked by name),
   * else `INVALID_SIGNAL` and nothing is written.
   *
   * Error codes: `INVALID_SIGNAL`, `EXECUTION_NOT_FOUND`, `EXECUTION_SETTLED`, store errors.
   *
   * @example
   * const order = defineFlow({ name: 'order', signals: { approve: z.object({ by: z.string() }) } }, run);
   * await runtime.signal(order, 'order-42', 'approve', { by: 'ada' });
   */
  signal<S extends SignalSchemas, N extends keyof S & string>(
    flow: WorkflowDefinition<never, unknown, S>,
    executionId: string,
    name: N,
    payload: InferInput<S[N]>,
    options?: SignalOptions,
  ): Promise<SignalSent>;
  /**
   * Send a signal made with `defineSignal`: the payload is type-checked against its schema's input
   * type and validated by the schema before anything is written (`INVALID_SIGNAL`); the execution's
   * flow, when known here and declaring signals, checks it too.
   *
   * @example
   * const approval = defineSignal('approve', z.object({ by: z.string() }));
   * await runtime.signal(approval, 'order-42', { by: 'ada' });
   */
  signal<S extends StandardSchemaV1>(
    signal: SignalDefinition<string, S>,
    executionId: string,
    payload: InferInput<S>,
    options?: SignalOptions,
  ): Promise<SignalSent>;
  /**
   * Send a signal by name, untyped (for tools and generic senders; the kernel's `signal` skips
   * even the checks below). When this process knows the execution's flow and that flow declares
   * signal schemas, the payload is validated first: an undeclared name or a refused payload is
   * `INVALID_SIGNAL` to the sender and nothing is written.
   */
  signal(
    executionId: string,
    name: string,
    payload: unknown,
    options?: SignalOptions,
  ): Promise<SignalSent>;
  async signal(
    target: string | SignalDefinition | WorkflowDefinition<never, unknown>,
    ...rest: unknown[]
  ): Promise<SignalSent> {
    if (typeof target === 'string') {
      const [name, payload, options] = rest as [string, unknown, SignalOptions | undefined];
      const flow = await this.flowOf(target);
      return this.checkedSignal(flow, target, name, payload, options);
    }
    if (isSignalDefinition(target)) {
      const [executionId, payload, options] = rest as [string, unknown, SignalOptions | undefined];
      const value = await checkSignal(target.schema, target.name, executionId, payload);
      const flow = await this.flowOf(executionId);
      return this.checkedSignal(flow, executionId, target.name, value, options);
    }
    const [executionId, name, payload, options] = rest as [
      string,
      string,
      unknown,
      SignalOptions | undefined,
    ];
    const runs = await this.flowNameOf(executionId);
    if (runs !== undefined && runs !== target.name) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_SIGNAL,
        `execution ${executionId} runs flow '${runs}', not '${target.name}': signal it with its own flow's definition`,
        { signal: name, executionId, flow: runs },
      );
    }
    return this.checkedSignal(target as AnyFlow, executionId, name, payload, options);
  }

  /** Validates against `flow`'s declared signals (when it declares any), then sends. */
  private async checkedSignal(
    flow: AnyFlow | undefined,
    executionId: string,
    name: string,
    payload: unknown,
    options: SignalOptions = {},
  ): Promise<SignalSent> {
    const schemas = flow?.options.signals;
    let value = payload;
    if (schemas !== undefined) {
      const schema = schemas[name];
      if (schema === undefined) {
        throw new LoomError(
          WorkflowErrorCode.INVALID_SIGNAL,
          `flow '${flow?.name}' accepts the signals ${Object.keys(schemas).join(', ') || '(none)'}, not '${name}'`,
          { signal: name, executionId },
        );
      }
      value = await checkSignal(schema, name, executionId, payload);
    }
    return this.kernel.signal(executionId, name, value, options);
  }

  /**
   * Ask a running (or finished) execution `query` (made with `defineQuery`) with `arg`: the
   * execution's log is replayed read-only in this process (no effect runs, nothing is written,
   * no lease is taken) up to its last durable point, and the handler the flow registered there
   * with `ctx.onQuery` answers. Wherever the execution is driven, and whether it is driven at
   * all, the answer reflects what its log holds (ADR 0061). The flow must be registered here.
   *
   * Error codes: `INVALID_QUERY` (argument or result refused by the query's schemas, or the
   * handler threw), `QUERY_NOT_HANDLED`, `EXECUTION_NOT_FOUND`, `FLOW_NOT_REGISTERED`,
   * `NON_DETERMINISM`, store errors.
   *
   * @example
   * const progress = defineQuery<void, { done: number }>('progress');
   * const { done } = await runtime.query(progress, 'import-7');
   */
  query<A, R>(query: QueryDefinition<string, A, R>, executionId: string, arg?: A): Promise<R> {
    return queryExecution(this.queryHost(), query, executionId, arg as A);
  }

  /**
   * Send `update` (made with `defineUpdate`) with `arg` to an execution and wait for the flow's
   * answer (`ctx.waitForUpdate(update)` … `answer(result)`). The argument is checked by the
   * update's schema and `validate` before anything is written (`INVALID_UPDATE`); the request is
   * journaled in the execution's inbox once per `updateId` (a second call with the same id writes
   * nothing and resolves with the same answer); the answer is awaited on the log, so it arrives
   * whichever process drives the execution, across a crash of the one that took the update.
   *
   * Error codes: `INVALID_UPDATE`, `INVALID_ARGUMENT` (updateId, timeout), `UPDATE_TIMEOUT`,
   * `UPDATE_NOT_ANSWERED`, `EXECUTION_NOT_FOUND`, `PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`, store errors.
   *
   * @example
   * const addItem = defineUpdate<{ sku: string }, { count: number }>('add-item');
   * const { count } = await runtime.update(addItem, 'cart-7', { sku: 'loom-1' }, { updateId: 'req-1' });
   */
  update<A, R>(
    update: UpdateDefinition<string, A, R>,
    executionId: string,
    arg: A,
    options: UpdateOptions = {},
  ): Promise<R> {
    return updateExecution(this.queryHost(), update, executionId, arg, options);
  }

  private queryHost(): ExecutionQueryHost {
    return {
      store: this.kernel.store,
      clock: this.kernel.clock,
      flow: (name, version) => this.registry.get(key(name, version)),
      signal: (executionId, name, payload, options) =>
        this.kernel.signal(executionId, name, payload, options),
    };
  }

  /**
   * Retry a failed execution from its failed step: completed steps replay (their effects do not
   * run again), the step whose failure failed the execution runs again with a fresh attempt
   * budget, and the log records the retry (`execution.retried` after `execution.failed`). Deploy
   * the fix first: the execution replays under the flow registered here. `options.by` and
   * `options.reason` (who asked, and why) are recorded in the `execution.retried` event.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_NOT_FAILED` (`fields.status`),
   * `FLOW_NOT_REGISTERED`, `STORE_BUSY`, store errors.
   *
   * @example
   * const handle = await runtime.retry('order-42', { by: 'ana', reason: 'deployed the fix' });
   * console.log(await handle.result());
   */
  retry<O = unknown>(executionId: string, options: RetryOptions = {}): Promise<ExecutionHandle<O>> {
    return this.placed(executionId, 'retry', () => this.kernel.retry<O>(executionId, options));
  }

  /**
   * A handle on an execution without driving it (it may run on another node): `result()`,
   * `status()`. Throws `INVALID_ENVELOPE` for a malformed id.
   *
   * @example
   * console.log(await runtime.attach<string>('order-42').result());
   */
  attach<O = unknown>(executionId: string): ExecutionHandle<O> {
    return this.kernel.attach<O>(executionId);
  }

  /**
   * Where an execution stands, from its log: `running` (or suspended), or how it settled.
   * Error codes: `EXECUTION_NOT_FOUND`, `INVALID_ENVELOPE`, store errors.
   */
  status(executionId: string): Promise<ExecutionState['status']> {
    return this.kernel.status(executionId);
  }

  /**
   * Resume an execution from its log on this node (after a crash, or to take it over): takes the
   * lease, advances the fence, replays. Error codes: `EXECUTION_NOT_FOUND`,
   * `FLOW_NOT_REGISTERED`, `RUNTIME_SHUT_DOWN`, store errors.
   */
  resume<O = unknown>(executionId: string): Promise<ExecutionHandle<O>> {
    return this.placed(executionId, 'resume', () => this.kernel.resume<O>(executionId));
  }

  /**
   * Runs `operation`; a `FLOW_NOT_REGISTERED` for a flow this node knows but may not run (its
   * placement) becomes `PLACEMENT_UNSATISFIED`, which says why.
   */
  private async placed<T>(
    executionId: string,
    operation: string,
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (isLoomError(error, KernelErrorCode.FLOW_NOT_REGISTERED)) {
        const { flow, version } = error.fields as { flow?: string; version?: string | null };
        const known =
          flow === undefined ? undefined : this.registry.get(key(flow, version ?? null));
        if (known !== undefined) this.assertPlaceable(known as never, operation, executionId);
      }
      throw error;
    }
  }

  /**
   * Cancel an execution: here it ends at its next barrier; elsewhere this node takes the fence
   * and appends `execution.cancelled`. False if it had already settled.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `INVALID_ENVELOPE`, `INVALID_ARGUMENT`,
   * `LIMIT_EXCEEDED` (a reason over `Limits.cancelReasonLengthMax`), store errors.
   *
   * @example
   * await runtime.cancel('order-42', 'customer asked');
   */
  cancel(executionId: string, reason?: string): Promise<boolean> {
    return reason === undefined
      ? this.kernel.cancel(executionId)
      : this.kernel.cancel(executionId, reason);
  }

  /**
   * Claim suspended executions whose timer is due (or that got a signal) and resume them here.
   * The timer poll does it every `timerPollMs`; call it yourself with `timerPollMs: 0`. Returns
   * the ids resumed. Throws `RUNTIME_SHUT_DOWN`, store errors.
   */
  wakeDue(limit?: number): Promise<string[]> {
    return this.kernel.wakeDue(limit);
  }

  /**
   * Resume running executions nobody drives (their lease expired, or their log has been quiet
   * for `recoverQuietMs`). Call it on boot; `recoverEveryMs` repeats it. Returns the ids this
   * node resumed. Throws `RUNTIME_SHUT_DOWN`, store errors.
   *
   * @example
   * const resumed = await runtime.recover();
   */
  recover(): Promise<string[]> {
    return this.kernel.recover();
  }

  /**
   * Keep this process alive while the runtime polls timers, recovers and drives executions,
   * until `shutdown()` (for a dedicated worker process). Throws `RUNTIME_SHUT_DOWN`.
   *
   * @example
   * process.on('SIGTERM', () => void runtime.shutdown());
   * await runtime.serve(); // returns after runtime.shutdown()
   */
  serve(): Promise<void> {
    return this.kernel.serve();
  }

  /** Wait for background work (snapshots, lease releases) to finish. For tests. */
  idle(): Promise<void> {
    return this.kernel.idle();
  }

  /**
   * Stop: stop this runtime's queue workers, stop driving executions at their next barrier and
   * release their leases (they stay in the log for recovery), hand the queue items whose
   * execution did not settle back to their queue (another worker claims them at once, see
   * `QueueWorker.handedBack`), then close the backend it was created with (unless
   * `closeBackend: false`). Calling it again does nothing more.
   */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    // The kernel stops taking work at once (synchronously), then the workers stop claiming.
    const stopped = this.kernel.shutdown();
    const workers = [...this.workers];
    this.workers.clear();
    await Promise.all(workers.map((worker) => worker.pause()));
    await stopped;
    // Only once nothing runs here: a claim handed back while its execution ran would be run twice.
    await Promise.all(workers.map((worker) => worker.handBack()));
    await this.ownedBackend?.close();
  }

  /**
   * List executions from the store's execution index, filtered by flow, version, status (how a
   * settled one ended included), creation and update time; one store query per page, ordered by
   * id. Page with the returned `nextCursor`.
   *
   * Error codes: `INVALID_ARGUMENT` (a bad filter), store errors.
   *
   * @example
   * const { executions, nextCursor } = await runtime.findExecutions({ flow: order, status: 'failed' });
   * for (const execution of executions) console.log(execution.id, execution.updatedAtMs);
   */
  findExecutions(options: FindFlowExecutionsOptions = {}): Promise<FlowExecutionPage> {
    return findFlowExecutions(this.kernel.store, options);
  }

  /**
   * Remove settled executions that ended before `endedBefore` from the log, one batch per call
   * (ADR 0053): their events, index rows, inboxes and snapshots. Each one's chain is verified
   * first and a receipt listing its id, event count and last hash is appended to the
   * `loom.pruned` log before anything is removed, so `loom verify --all` still vouches for them.
   * Running and suspended executions are never touched; a child whose parent has not settled,
   * and an execution whose chain is broken, are kept and reported in `skipped`. Go on with
   * `nextCursor` until it is undefined.
   *
   * Error codes: `INVALID_ARGUMENT` (bad options), `STORE_READ_ONLY`, store errors.
   *
   * @example
   * const monthAgo = new Date(Date.now() - 30 * 24 * 3_600_000);
   * let cursor: string | undefined;
   * do {
   *   const report = await runtime.prune({ endedBefore: monthAgo, ...(cursor ? { cursor } : {}) });
   *   cursor = report.nextCursor;
   * } while (cursor !== undefined);
   */
  prune(options: RuntimePruneOptions): Promise<PruneReport> {
    return pruneRuns(this.kernel.store, this.snapshotStore, options, this.kernel.clock.now());
  }

  /**
   * Run `flow` on a cron schedule: `'0 9 * * MON-FRI'`, `@hourly`, … in a time zone. The schedule
   * is itself a durable execution (`cron:<name>`, continued every `cronRunsPerGeneration` fires as
   * `cron:<name>#1`, …), so each occurrence fires exactly once across all processes that call
   * `schedule`, and a restart during a due time fires it after the restart (`catchUp`).
   *
   * Call it on every boot: with the definition the schedule already runs it only reads (no
   * execution is started); with a changed expression, time zone, options, flow version or input
   * it cancels the running generation (the reason names the change) and starts the next one with
   * the new definition; after `unschedule` it starts the schedule again. Returns the id of the
   * execution that runs the definition.
   *
   * Error codes: `INVALID_CRON`, `INVALID_TIME_ZONE`, `INVALID_ARGUMENT`, `SCHEDULE_CONTENDED`.
   *
   * @example
   * await runtime.schedule(report, '0 9 * * MON-FRI', { timezone: 'Europe/Berlin' });
   */
  async schedule<I>(
    flow: WorkflowDefinition<I, unknown>,
    expression: string,
    options: ScheduleOptions & { input?: I } = {},
  ): Promise<string> {
    if (!this.registry.has(key(flow.name, flow.version ?? null))) this.register(flow as never);
    const config: CronScheduleInput = scheduleInput(
      flow as unknown as AnyFlow,
      expression,
      options,
    );
    return this.schedules.schedule(config);
  }

  /**
   * Stop a schedule by name: cancels its newest execution, however many generations it has
   * continued through (runs already started go on). `schedule` starts it again. True when it was
   * firing, false when it was already stopped or never scheduled.
   *
   * Error codes: `SCHEDULE_CONTENDED`, store errors.
   */
  unschedule(name: string): Promise<boolean> {
    return this.schedules.unschedule(name);
  }

  /**
   * Where a schedule stands by name: its newest execution, whether it fires, and its definition;
   * undefined if it was never scheduled.
   */
  describeSchedule(name: string): Promise<ScheduleDescription | undefined> {
    return this.schedules.describe(name);
  }

  /**
   * Put a run of `flow` on `queue` after validating `input` against the flow's schema (nothing
   * is written if it fails: `INVALID_INPUT`). A worker (`work`) runs it as execution
   * `queue:<queue>:<itemId>`. Returns `duplicate: true` (writing nothing) for an existing
   * `itemId` or an unfinished item with the same `dedupeKey`. A flow that declares
   * `concurrency` files the item under `concurrency.key(input)` with its limit (its
   * `partitionKey` and `partitionConcurrencyMax`), so passing `partitionKey` too is refused; a
   * flow that declares `throttle` files it under `throttle.key(input)` with its limit and period;
   * one that declares `singleton` dedupes it by `singleton.key(input)` (an unfinished run of the
   * key answers `duplicate: true` with its `itemId`), so passing `dedupeKey` too is refused — with
   * `mode: 'cancel'` it files the item under the key's own partition of limit 1 instead and
   * cancels the key's older runs (a claimed one now, a waiting one when a worker claims it), so
   * passing `partitionKey` too is refused; one
   * that declares `idempotency` answers the first run of its key within the window the same way;
   * one that declares `debounce` collapses enqueues of `debounce.key(input)` into the key's
   * not-yet-started run (`duplicate: true` with its `itemId`; it now carries this input and starts
   * `periodMs` from now, capped by `maxWaitMs`), so passing `dedupeKey` too is refused.
   *
   * Error codes: `QUEUE_STORE_MISSING`, `INVALID_INPUT`, `INVALID_FLOW_KEY`, `INVALID_ARGUMENT`,
   * the queue store's (`INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, store errors).
   *
   * @example
   * await runtime.enqueue('emails', sendEmail, { to: 'ada@example.com' }, { priority: 5, partitionKey: 'tenant-1' });
   */
  async enqueue<I>(
    queue: string,
    flow: WorkflowDefinition<I, unknown>,
    input: I,
    options: EnqueueOptions = {},
  ): Promise<EnqueueResult> {
    const queues = this.requireQueues('enqueue');
    if (!this.registry.has(key(flow.name, flow.version ?? null))) this.register(flow as never);
    let value: unknown = input;
    if (flow.options.input !== undefined) {
      const checked = await validate(flow.options.input, input);
      if (!checked.ok) {
        throw new LoomError(
          WorkflowErrorCode.INVALID_INPUT,
          `input of flow '${flow.name}' refused by its schema: ${checked.message}`,
          { flow: flow.name, issues: checked.issues },
        );
      }
      value = checked.value;
    }
    const singleton = singletonOf(flow as unknown as AnyFlow, value, options);
    const control = flowControlOf(flow as unknown as AnyFlow, value, options);
    checkCancelPartition(flow.name, singleton.partitionKey !== undefined, control, options);
    const result = await queues.enqueue({
      queue,
      flow: flow.name,
      version: flow.version ?? null,
      input: (value === undefined ? null : value) as JsonValue,
      ...options,
      ...control,
      ...throttleOf(flow as unknown as AnyFlow, value),
      ...singleton,
      ...idempotencyOf(flow as unknown as AnyFlow, value),
      ...debounceOf(flow as unknown as AnyFlow, value, options.dedupeKey),
    });
    // Singleton mode 'cancel': the newer item is written; cancel the key's older runs.
    if (singleton.partitionKey !== undefined && !result.duplicate) {
      await supersedeOlder(
        queues,
        (executionId, reason) => this.cancel(executionId, reason),
        queue,
        singleton.partitionKey,
        result.itemId,
      );
    }
    return result;
  }

  /**
   * Drain `queue` on this runtime: a loop that claims what the global limits allow (priority
   * first), starts each item as execution `queue:<queue>:<itemId>` (idempotent), renews the
   * claims while they run and completes each item when its execution settles. Items whose
   * execution already settled (a restart) are completed at once; ones still running are resumed.
   * Every worker of a queue should pass the same limits. Background failures go to `onError`.
   *
   * Error codes: `QUEUE_STORE_MISSING`.
   *
   * @example
   * const worker = runtime.work('emails', { concurrencyMax: 10, rate: { count: 100, windowMs: 60_000 } });
   * // …
   * await worker.stop();
   */
  work(queue: string, options: WorkOptions = {}): QueueWorker {
    const queues = this.requireQueues('work');
    const worker = new QueueWorkerLoop(
      {
        kernel: this.kernel,
        queues,
        lookup: (name, version) => this.lookup(name, version),
        runnable: () => this.runnable(),
        onError: this.onError,
      },
      queue,
      options,
    );
    this.workers.add(worker);
    return worker;
  }

  /**
   * One queue's counts: items waiting (`depth`), under a live claim (`claimed`), and finished by
   * how their execution ended (`completed`, `failed`, `cancelled`). One store query.
   *
   * Error codes: `QUEUE_STORE_MISSING`, `INVALID_ARGUMENT`, store errors.
   *
   * @example
   * const { depth, failed } = await runtime.queueStats('emails');
   */
  async queueStats(queue: string): Promise<QueueStats> {
    return this.requireQueues('queueStats').queueStats(queue);
  }

  /**
   * Every queue's counts (see {@link Runtime.queueStats}), by name; page with `afterQueue`.
   * One store query per page.
   *
   * Error codes: `QUEUE_STORE_MISSING`, `INVALID_ARGUMENT`, store errors.
   */
  async listQueues(options: ListQueuesOptions = {}): Promise<QueueStats[]> {
    return this.requireQueues('listQueues').listQueues(options);
  }

  private requireQueues(operation: string): QueueStore {
    if (this.queues === undefined) {
      throw new LoomError(
        WorkflowErrorCode.QUEUE_STORE_MISSING,
        `${operation} needs a queue store: create the runtime with a backend ` +
          '(openMemory(), openSqlite(…), openPostgres(…)) or pass { queues }',
        { operation },
      );
    }
    return this.queues;
  }

  private async flowOf(executionId: string): Promise<AnyFlow | undefined> {
    const started = await this.startedOf(executionId);
    if (started?.flow === undefined) return undefined;
    return this.registry.get(key(started.flow, started.version ?? null));
  }

  /** The flow name the execution's `execution.started` records (undefined before it starts). */
  private async flowNameOf(executionId: string): Promise<string | undefined> {
    return (await this.startedOf(executionId))?.flow;
  }

  private async startedOf(
    executionId: string,
  ): Promise<{ flow?: string; version?: string | null } | undefined> {
    const [started] = await this.kernel.store.read(executionId, { limit: 1 });
    return started?.payload as { flow?: string; version?: string | null } | undefined;
  }

  /** The flows this node runs (registered, and placeable here): what its queue workers claim. */
  private runnable(): FlowKey[] {
    const keys: FlowKey[] = [];
    for (const flow of this.registry.values()) {
      if (this.placeable(flow as never))
        keys.push({ name: flow.name, version: flow.version ?? null });
    }
    return keys;
  }

  private lookup(name: string, version: string | null): AnyFlow {
    const flow = this.registry.get(key(name, version));
    if (flow !== undefined) this.assertPlaceable(flow as never, 'run');
    if (flow === undefined) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `flow '${name}'${version === null ? '' : ` version ${version}`} is not registered here`,
        {
          flow: name,
        },
      );
    }
    return flow;
  }
}

/** Runs a signal's schema; a refusal is `INVALID_SIGNAL` naming the issues. */
async function checkSignal(
  schema: StandardSchemaV1,
  name: string,
  executionId: string,
  payload: unknown,
): Promise<unknown> {
  const checked = await validate(schema, payload);
  if (!checked.ok) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_SIGNAL,
      `signal '${name}' refused by its schema: ${checked.message}`,
      { signal: name, executionId, issues: checked.issues },
    );
  }
  return checked.value;
}

function key(name: string, version: string | null): string {
  return version === null ? name : `${name}@${version}`;
}

/**
 * Create the runtime: on a backend opened by one call, with the flows this process runs. It
 * starts polling timers at once (`timerPollMs`, default 1 s); call `recover()` on boot.
 *
 * Error codes: `INVALID_ARGUMENT` (no backend or store, bad settings), `INVALID_FLOW`.
 *
 * @example
 * import { createRuntime, defineFlow } from '@loom/workflow-runtime';
 * import { openSqlite } from '@loom/workflow-runtime/sqlite';
 *
 * const hello = defineFlow({ name: 'hello' }, async (ctx, input: { name: string }) =>
 *   ctx.step('greet', () => `hello, ${input.name}`),
 * );
 * const runtime = createRuntime({ backend: openSqlite({ path: 'loom.db', migrate: true }), flows: [hello] });
 * await runtime.recover();
 * const handle = await runtime.start(hello, { name: 'ada' });
 * console.log(await handle.result());
 * await runtime.shutdown(); // also closes the backend
 */
export function createRuntime(options: RuntimeOptions): Runtime {
  return new Runtime(options);
}

/**
 * The tags a flow's placement asks for. Only `defineFlow` values carry `options`: a kernel flow
 * (an agent's, one built by hand) has none and runs anywhere.
 */
function placementTags(flow: WorkflowDefinition<never, unknown>): readonly string[] {
  return (flow as Partial<WorkflowDefinition<never, unknown>>).options?.placement?.tags ?? [];
}

/**
 * A cancel-mode singleton's partition is the queue worker's signal to cancel all but the newest
 * item of it, claimed in enqueue order. So: its items take no `priority` (a claim orders by
 * priority first: an older item of higher priority would run after the newer one), and no other
 * item may use a partition key with its reserved prefix (a caller's `partitionKey`, or a
 * `concurrency.key` result). `INVALID_ARGUMENT` otherwise.
 */
function checkCancelPartition(
  flow: string,
  cancelMode: boolean,
  control: { partitionKey?: string },
  options: EnqueueOptions,
): void {
  if (cancelMode && options.priority !== undefined && options.priority !== 0) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}' is a singleton with mode 'cancel', whose newest start must run last: drop ` +
        `the priority option (got ${options.priority})`,
      { flow, path: 'priority', actual: options.priority },
    );
  }
  const partitionKey = control.partitionKey ?? options.partitionKey;
  if (!cancelMode && partitionKey?.startsWith(singletonCancelPrefix) === true) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `partition key '${partitionKey}' of flow '${flow}' starts with '${singletonCancelPrefix}', ` +
        "which is reserved for singletons with mode 'cancel'",
      { flow, path: 'partitionKey', actual: partitionKey },
    );
  }
}

/**
 * The partition a flow's per-key `concurrency` files an item under: `concurrency.key(input)` and
 * its limit. Throws `INVALID_FLOW_KEY` for a key function that throws or returns no non-empty
 * string, `INVALID_ARGUMENT` when the caller passes its own `partitionKey` as well.
 */
function flowControlOf(
  flow: AnyFlow,
  input: unknown,
  options: EnqueueOptions,
): { partitionKey?: string; partitionConcurrencyMax?: number } {
  const concurrency = flow.options.concurrency;
  if (concurrency === undefined) return {};
  if (options.partitionKey !== undefined) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow.name}' keys its runs by its concurrency.key: drop the partitionKey option`,
      { flow: flow.name, path: 'partitionKey' },
    );
  }
  let partitionKey: unknown;
  try {
    partitionKey = concurrency.key(input);
  } catch (error) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_FLOW_KEY,
      `the concurrency.key of flow '${flow.name}' threw for this input: ${String(error)}`,
      { flow: flow.name },
      error,
    );
  }
  if (typeof partitionKey !== 'string' || partitionKey.length === 0) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_FLOW_KEY,
      `the concurrency.key of flow '${flow.name}' must return a non-empty string, got ` +
        `${typeof partitionKey === 'string' ? "''" : typeof partitionKey}`,
      { flow: flow.name, actual: typeof partitionKey === 'string' ? '' : typeof partitionKey },
    );
  }
  return { partitionKey, partitionConcurrencyMax: concurrency.limit };
}
