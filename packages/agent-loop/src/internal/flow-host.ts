// The one place this package touches the flow runtime's API: the kernel and flow runtimes are
// being merged into one user-facing constructor, so everything the agent loop needs from them
// goes through here.
import type {
  Clock,
  JsonValue,
  RecordEffectContext,
  StepRetryPolicy,
  StoredEvent,
  StoredSignal,
} from '@loom/event-runtime';
import {
  type Duration,
  defineFlow,
  type Runtime,
  type WorkflowContext,
  type WorkflowDefinition,
} from '@loom/workflow-runtime';

/** What the agent flow gets from the runtime for one run. */
export interface TurnContext {
  readonly runId: string;
  /**
   * A recorded step: `fn` runs at most until its result is journaled; a replay returns the
   * record. `retry` is the step's own policy (`false`: never retried); absent, the flow
   * runtime's `stepRetry` applies, so every step that must not repeat passes `false`.
   */
  step<T extends JsonValue | null>(
    name: string,
    fn: (effect: { signal: AbortSignal; nowMs: () => number }) => T | Promise<T>,
    options: StepOptions,
  ): Promise<T>;
  /**
   * A record of what the run decided (`ctx.record`): `fn` runs at once, with no start record and
   * no barrier before it; its result is durable with the run's next write. A crash before that
   * runs `fn` again, so it must be pure but for what it announces. A replay returns the record.
   */
  record<T extends JsonValue | null>(
    name: string,
    fn: (effect: RecordEffect) => T | Promise<T>,
  ): Promise<T>;
  /** The runtime clock's time, recorded in the log the first time and read back on replay. */
  now(): number;
  /**
   * Waits durably for a signal; suspends the run (no lease, no memory) while nothing else runs.
   * `kind` labels the wait in the execution index (`approval`, `question`; default `signal`).
   */
  waitForSignal(
    name: string,
    timeoutMs: number | undefined,
    kind?: 'signal' | 'approval' | 'question',
  ): Promise<{ received: true; payload: JsonValue } | { received: false }>;
  /**
   * Runs the flow named `flowName` as a durable child of this run (started once, whatever
   * crashes; a replay returns its recorded output) and returns its output. Throws the kernel's
   * `CHILD_FAILED` when the child failed or was cancelled.
   */
  child(flowName: string, input: JsonValue, executionId: string): Promise<JsonValue>;
}

/** What a {@link TurnContext} record's function gets: a step's, and `onDurable`. */
export interface RecordEffect {
  readonly signal: AbortSignal;
  nowMs(): number;
  /** Runs `fn` once the record is in the log (never on a replay). */
  onDurable(fn: () => void): void;
}

/** What a {@link TurnContext} step takes. */
export interface StepOptions {
  timeoutMs?: number;
  idempotent?: boolean;
  retry?: Pick<StepRetryPolicy, 'attempts' | 'backoff'> | false;
}

/** Finds a registered flow by name, for `TurnContext.child`. */
export type FlowLookup = (flowName: string) => HostedFlow | undefined;

/** The flow runtime's options for a step that is never retried (the agent's records). */
const recordOnce: { retry: false } = { retry: false };

/**
 * What a step's effect gets: the step's signal, read from the runtime's effect only when the
 * effect asks for it (the runtime makes an AbortSignal only for a step that reads one, and most
 * of a turn's steps are records that never do), and the runtime clock's time.
 */
class TurnEffect {
  constructor(private readonly effect: { signal: AbortSignal; clock: { now(): number } }) {}

  get signal(): AbortSignal {
    return this.effect.signal;
  }

  readonly nowMs = (): number => this.effect.clock.now();
}

/** A record's {@link TurnEffect}, with the runtime's `onDurable`. */
class TurnRecordEffect extends TurnEffect implements RecordEffect {
  constructor(private readonly record: RecordEffectContext) {
    super(record);
  }

  onDurable(fn: () => void): void {
    this.record.onDurable(fn);
  }
}

function turnContext(ctx: WorkflowContext, flowOf: FlowLookup): TurnContext {
  return {
    runId: ctx.executionId,
    step: (name, fn, options) => {
      let stepOptions: {
        timeout?: Duration;
        idempotent?: boolean;
        retry?: StepRetryPolicy | false;
      };
      if (
        options.retry === false &&
        options.timeoutMs === undefined &&
        options.idempotent !== true
      ) {
        stepOptions = recordOnce;
      } else {
        stepOptions = {};
        if (options.timeoutMs !== undefined) stepOptions.timeout = options.timeoutMs;
        if (options.idempotent === true) stepOptions.idempotent = true;
        if (options.retry !== undefined) stepOptions.retry = options.retry;
      }
      return ctx.step(
        name,
        ((effect: { signal: AbortSignal; clock: { now(): number } }) =>
          fn(new TurnEffect(effect))) as never,
        stepOptions,
      ) as never;
    },
    record: (name, fn) =>
      ctx.record(name, ((effect: RecordEffectContext) =>
        fn(new TurnRecordEffect(effect))) as never) as never,
    now: () => ctx.now(),
    waitForSignal: async (name, timeoutMs, kind) => {
      const wait = await ctx.waitForSignal(name, {
        ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
        ...(kind === undefined ? {} : { kind }),
      });
      return wait.received ? { received: true, payload: wait.payload } : { received: false };
    },
    child: (flowName, input, executionId) => {
      const flow = flowOf(flowName);
      if (flow === undefined) {
        // The agent runtime registers every agent an agent tool names: a broken invariant.
        throw new Error(`flow '${flowName}' is not registered with this runtime`);
      }
      return ctx.child(flow, input, { executionId });
    },
  };
}

/** A flow definition whose body gets a {@link TurnContext}. */
export type HostedFlow = WorkflowDefinition<JsonValue, JsonValue>;

export function hostedFlow(
  name: string,
  version: string,
  run: (ctx: TurnContext, input: JsonValue) => Promise<JsonValue>,
  flowOf: FlowLookup = () => undefined,
): HostedFlow {
  const body = (ctx: WorkflowContext, input: unknown): Promise<JsonValue> =>
    run(turnContext(ctx, flowOf), input as JsonValue);
  return defineFlow({ name, version }, body as never) as HostedFlow;
}

/** The runtime operations the agent runtime uses. */
export class FlowHost {
  constructor(private readonly flows: Runtime) {}

  register(flow: HostedFlow): void {
    this.flows.register(flow as WorkflowDefinition<never, unknown>);
  }

  async start(
    flow: HostedFlow,
    input: JsonValue,
    runId: string | undefined,
  ): Promise<{ runId: string; existing: boolean; result: () => Promise<JsonValue> }> {
    const handle = await this.flows.start(
      flow,
      input,
      runId === undefined ? {} : { executionId: runId },
    );
    return {
      runId: handle.executionId,
      existing: handle.existing,
      result: () => handle.result(),
    };
  }

  attach(runId: string): () => Promise<JsonValue> {
    const handle = this.flows.attach<JsonValue>(runId);
    return () => handle.result();
  }

  /** Sends a signal once per `idempotencyKey`; `duplicate` when one with that key was sent before. */
  async signal(
    runId: string,
    name: string,
    payload: JsonValue,
    idempotencyKey: string,
  ): Promise<{ duplicate: boolean }> {
    const sent = await this.flows.signal(runId, name, payload, { idempotencyKey });
    return { duplicate: sent.duplicate };
  }

  cancel(runId: string, reason: string): Promise<boolean> {
    return this.flows.cancel(runId, reason);
  }

  read(runId: string): Promise<StoredEvent[]> {
    return this.flows.store.read(runId);
  }

  readSignals(runId: string): Promise<StoredSignal[]> {
    return this.flows.store.readSignals(runId);
  }

  /** The run's execution status (`running`, `suspended`, `completed`, `cancelled`, …). */
  status(runId: string): Promise<string> {
    return this.flows.status(runId);
  }

  nowMs(): number {
    return this.flows.clock.now();
  }

  /** The runtime's clock (its `defer` paces the coalescing of streamed text). */
  get clock(): Clock {
    return this.flows.clock;
  }

  /** One page of a run's log from `fromSequence`. */
  readPage(runId: string, fromSequence: number, limit: number): Promise<StoredEvent[]> {
    return this.flows.store.read(runId, { fromSequence, limit });
  }

  /** Follows a run's log from `fromSequence` (catching up first), as events are appended. */
  subscribe(
    runId: string,
    fromSequence: number,
    handler: (events: StoredEvent[]) => Promise<void>,
    onError: (error: unknown) => void,
  ): { close(): Promise<void> } {
    return this.flows.store.subscribe({ executionId: runId, fromSequence, onError }, handler);
  }
}
