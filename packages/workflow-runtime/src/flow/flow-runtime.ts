import {
  createRuntime,
  type EnqueueResult,
  type ExecutionHandle,
  type JsonValue,
  type ListQueuesOptions,
  type QueueStats,
  type QueueStore,
  type Runtime,
  type RuntimeOptions,
  type StepRetryPolicy,
} from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import {
  type CronScheduleInput,
  cronScheduleFlow,
  type ScheduleOptions,
  scheduleInput,
} from './cron-schedule.js';
import type { SignalSchemas, WorkflowDefinition } from './define-flow.js';
import { isSignalDefinition, type SignalDefinition } from './define-signal.js';
import {
  type FindFlowExecutionsOptions,
  type FlowExecutionPage,
  findFlowExecutions,
} from './find-executions.js';
import {
  type EnqueueOptions,
  type QueueWorker,
  QueueWorkerLoop,
  type WorkOptions,
} from './queue-worker.js';
import { ScheduleChain, type ScheduleDescription } from './schedule-chain.js';
import { type InferInput, type StandardSchemaV1, validate } from './standard-schema.js';
import { stopOnTerminal } from './workflow-context.js';

export interface FlowRuntimeOptions extends Omit<RuntimeOptions, 'flows'> {
  /** Every flow this process can run or resume (by name and version). */
  flows?: ReadonlyArray<WorkflowDefinition<never, unknown>>;
  /**
   * The retry policy of every step that sets none (a step's own `retry` overrides it; `retry:
   * false` turns it off for that step). Retries are durable, and a `terminalError()` is never
   * retried. Default: one attempt.
   */
  stepRetry?: StepRetryPolicy;
  /**
   * Durable queues for `enqueue` and `work` (`InMemoryQueueStore`, `SqliteQueueStore` on the
   * event store's database, `PostgresQueueStore` on its pool). Without it those two throw
   * `QUEUE_STORE_MISSING`.
   */
  queues?: QueueStore;
}

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
 * The runtime flow authors use: the kernel's `Runtime` plus schema validation at the edges
 * (inputs and signal payloads are checked before anything is written), a flow registry by name
 * and version, and cron schedules.
 *
 * @example
 * const runtime = createFlowRuntime({ store, flows: [order] });
 * await runtime.recover();
 * const handle = await runtime.start(order, { sku: 'loom-1' }, { executionId: 'order-42' });
 */
export class FlowRuntime {
  /** The kernel runtime underneath (resume, recover, cancel, wakeDue, …). */
  readonly kernel: Runtime;
  /** The queue store of `enqueue` and `work`, if one was given. */
  readonly queues: QueueStore | undefined;
  private readonly registry = new Map<string, AnyFlow>();
  private readonly onError: (error: unknown) => void;
  private readonly schedules: ScheduleChain;

  constructor(options: FlowRuntimeOptions) {
    const { flows, queues, stepRetry, ...kernelOptions } = options;
    this.queues = queues;
    this.onError = options.onError ?? (() => undefined);
    this.kernel = createRuntime(
      stepRetry === undefined
        ? kernelOptions
        : { ...kernelOptions, stepRetry: stopOnTerminal(stepRetry) },
    );
    const scheduleFlow = cronScheduleFlow(this.kernel, (name, version) =>
      this.lookup(name, version),
    );
    this.register(scheduleFlow as never);
    this.schedules = new ScheduleChain(this.kernel, () => scheduleFlow);
    for (const flow of flows ?? []) this.register(flow);
  }

  /** Make a flow runnable and resumable here. */
  register(flow: WorkflowDefinition<never, unknown>): void {
    this.kernel.register(flow);
    this.registry.set(key(flow.name, flow.version ?? null), flow as unknown as AnyFlow);
  }

  /**
   * Start an execution after validating `input` against the flow's schema (nothing is written
   * if it fails: `INVALID_INPUT` naming the issues). Idempotent on a caller-chosen id.
   */
  async start<I, O>(
    flow: WorkflowDefinition<I, O>,
    input: I,
    options: { executionId?: string } = {},
  ): Promise<ExecutionHandle<O>> {
    if (!this.registry.has(key(flow.name, flow.version ?? null))) this.register(flow as never);
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
   * Retry a failed execution from its failed step: completed steps replay (their effects do not
   * run again), the step whose failure failed the execution runs again with a fresh attempt
   * budget, and the log records the retry (`execution.retried` after `execution.failed`). Deploy
   * the fix first: the execution replays under the flow registered here.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_NOT_FAILED` (`fields.status`),
   * `FLOW_NOT_REGISTERED`, `STORE_BUSY`, store errors.
   *
   * @example
   * const handle = await runtime.retry('order-42');
   * console.log(await handle.result());
   */
  retry<O = unknown>(executionId: string): Promise<ExecutionHandle<O>> {
    return this.kernel.retry<O>(executionId);
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
   * `itemId` or an unfinished item with the same `dedupeKey`.
   *
   * Error codes: `QUEUE_STORE_MISSING`, `INVALID_INPUT`, the queue store's (`INVALID_ARGUMENT`,
   * `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, store errors).
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
    return queues.enqueue({
      queue,
      flow: flow.name,
      version: flow.version ?? null,
      input: (value === undefined ? null : value) as JsonValue,
      ...options,
    });
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
    return new QueueWorkerLoop(
      {
        kernel: this.kernel,
        queues,
        lookup: (name, version) => this.lookup(name, version),
        onError: this.onError,
      },
      queue,
      options,
    );
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
   * Every queue's counts (see {@link FlowRuntime.queueStats}), by name; page with `afterQueue`.
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
        `${operation} needs a queue store: create the FlowRuntime with { queues } (an ` +
          "InMemoryQueueStore, a SqliteQueueStore on the event store's database, or a PostgresQueueStore)",
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

  private lookup(name: string, version: string | null): AnyFlow {
    const flow = this.registry.get(key(name, version));
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

/** Create a {@link FlowRuntime}. */
export function createFlowRuntime(options: FlowRuntimeOptions): FlowRuntime {
  return new FlowRuntime(options);
}
