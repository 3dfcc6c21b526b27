import {
  createRuntime,
  type ExecutionHandle,
  isLoomError,
  type Runtime,
  type RuntimeOptions,
} from '@loom/event-runtime';
import { ErrorCode, LoomError } from '../errors.js';
import {
  type CronScheduleInput,
  cronScheduleFlow,
  cronScheduleId,
  type ScheduleOptions,
  scheduleInput,
} from './cron-schedule.js';
import type { WorkflowDefinition } from './define-flow.js';
import { validate } from './standard-schema.js';

export interface FlowRuntimeOptions extends Omit<RuntimeOptions, 'flows'> {
  /** Every flow this process can run or resume (by name and version). */
  flows?: ReadonlyArray<WorkflowDefinition<never, unknown>>;
}

type AnyFlow = WorkflowDefinition<unknown, unknown>;

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
  private readonly registry = new Map<string, AnyFlow>();

  constructor(options: FlowRuntimeOptions) {
    const { flows, ...kernelOptions } = options;
    this.kernel = createRuntime(kernelOptions);
    this.register(
      cronScheduleFlow(
        () => this.kernel,
        (name, version) => this.lookup(name, version),
      ) as never,
    );
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
          ErrorCode.INVALID_INPUT,
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
   * Send a signal. When this process knows the execution's flow and that flow declares signal
   * schemas, the payload is validated first: an undeclared name or a refused payload is
   * `INVALID_SIGNAL` to the sender and nothing is written.
   */
  async signal(
    executionId: string,
    name: string,
    payload: unknown,
    options: { idempotencyKey?: string } = {},
  ): Promise<{ signalId: number; duplicate: boolean }> {
    const flow = await this.flowOf(executionId);
    const schemas = flow?.options.signals;
    let value = payload;
    if (schemas !== undefined) {
      const schema = schemas[name];
      if (schema === undefined) {
        throw new LoomError(
          ErrorCode.INVALID_SIGNAL,
          `flow '${flow?.name}' accepts the signals ${Object.keys(schemas).join(', ') || '(none)'}, not '${name}'`,
          { signal: name, executionId },
        );
      }
      const checked = await validate(schema, payload);
      if (!checked.ok) {
        throw new LoomError(
          ErrorCode.INVALID_SIGNAL,
          `signal '${name}' refused by its schema: ${checked.message}`,
          {
            signal: name,
            executionId,
            issues: checked.issues,
          },
        );
      }
      value = checked.value;
    }
    return this.kernel.signal(executionId, name, value, options);
  }

  /**
   * Run `flow` on a cron schedule: `'0 9 * * MON-FRI'`, `@hourly`, … in a time zone. The schedule
   * is itself a durable execution (`cron:<name>`), so each occurrence fires exactly once across
   * all processes that call `schedule`, and a restart during a due time fires it after the restart
   * (`catchUp`). Returns the schedule's execution id.
   *
   * Error codes: `INVALID_CRON`, `INVALID_TIME_ZONE`, `INVALID_ARGUMENT`.
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
    const id = cronScheduleId(config.name);
    await this.kernel.start(this.lookup('loom.cron.schedule', null), config, { executionId: id });
    return id;
  }

  /** Stop a schedule (cancels its execution; runs already started go on). */
  async unschedule(name: string): Promise<boolean> {
    try {
      return await this.kernel.cancel(cronScheduleId(name), 'unscheduled');
    } catch (error) {
      if (isLoomError(error, 'EXECUTION_NOT_FOUND')) return false;
      throw error;
    }
  }

  private async flowOf(executionId: string): Promise<AnyFlow | undefined> {
    const [started] = await this.kernel.store.read(executionId, { limit: 1 });
    const payload = started?.payload as { flow?: string; version?: string | null } | undefined;
    if (payload?.flow === undefined) return undefined;
    return this.registry.get(key(payload.flow, payload.version ?? null));
  }

  private lookup(name: string, version: string | null): AnyFlow {
    const flow = this.registry.get(key(name, version));
    if (flow === undefined) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `flow '${name}'${version === null ? '' : ` version ${version}`} is not registered here`,
        {
          flow: name,
        },
      );
    }
    return flow;
  }
}

function key(name: string, version: string | null): string {
  return version === null ? name : `${name}@${version}`;
}

/** Create a {@link FlowRuntime}. */
export function createFlowRuntime(options: FlowRuntimeOptions): FlowRuntime {
  return new FlowRuntime(options);
}
