import type {
  FlowContext,
  JsonValue,
  RecordEffectContext,
  SignalWaitKind,
  StepEffectContext,
  StepRetryPolicy,
  TransactionHandle,
} from '@loom/event-runtime';
import {
  type AttemptContext,
  composeMiddleware,
  type EffectMiddleware,
  isTerminalError,
  timeoutMiddleware,
  wrapEffect,
} from '@loom/middleware';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import type { QueryDefinition } from './define-query.js';
import { isSignalDefinition, type SignalDefinition } from './define-signal.js';
import {
  isUpdateDefinition,
  type UpdateDefinition,
  updateAnswerStep,
  updateSignalName,
} from './define-update.js';
import { type Duration, parseDuration } from './duration.js';
import { type EventReceived, type WaitForEventOptions, waitForEvent } from './event-wait.js';
import type { Json } from './json.js';
import { registerQueryHandler } from './query-handlers.js';
import { type InferOutput, type StandardSchemaV1, validate } from './standard-schema.js';
import type { WorkflowDefinition } from './workflow-definition.js';

/** Per-step policy: retries with backoff, a timeout, and any effect middleware. */
export interface StepOptions {
  /**
   * Retry the effect on failure, durably (a `terminalError()` stops it): all attempts are one step,
   * each failed attempt is journaled (`step.attempt_failed`, with its error and the next retry
   * time) and the backoff is a durable timer, so a crash neither restarts the count nor loses
   * the wait. Overrides the runtime's `stepRetry`; `false` turns retries off for this step.
   * `middleware` and `timeout` apply to each attempt.
   */
  retry?: StepRetryPolicy | false;
  /** Abort the effect (through its signal) and fail the attempt after this long. */
  timeout?: Duration;
  /**
   * More effect middleware (timing, logging, tracing, rate limits, …), outermost first. They run
   * once per attempt, outside `timeout`, each seeing that attempt's error.
   */
  middleware?: readonly EffectMiddleware[];
  /** The effect is safe to repeat (recorded for operators). */
  idempotent?: boolean;
}

/** What `waitForSignal` gives back. */
export type Received<T> = { received: true; payload: T; signalId: number } | { received: false };

/**
 * What `waitForUpdate` gives back: the update's id and argument, and `answer`, which journals
 * the flow's answer (a durable step named `loom.update:<updateId>`); or that the wait timed out.
 */
export type ReceivedUpdate<A, R> =
  | {
      received: true;
      updateId: string;
      arg: A;
      /**
       * Journal the answer and hand it to the caller (once it is durable). Call it once per
       * update (`DUPLICATE_STEP_NAME` otherwise); the answer must be JSON. With the update's
       * `result` schema, an answer the schema refuses throws `INVALID_UPDATE` here, unjournaled.
       */
      answer(result: R): Promise<void>;
    }
  | { received: false };

/** What a flow defined with `defineFlow` gets. */
export interface WorkflowContext {
  readonly executionId: string;
  /** Fires when the execution is cancelled or this node stops driving it. */
  readonly signal: AbortSignal;
  /**
   * A durable step: runs once per execution (at least once across crashes), its result recorded
   * and replayed. Retries and the timeout apply inside the step. The result must be JSON
   * ({@link Json}): a `Date`, `Map`, `bigint` or class instance is a compile error here and
   * `PAYLOAD_NOT_JSON` at run time.
   */
  step<T>(
    name: string,
    // The second signature only checks the awaited result against Json; T is inferred from the
    // first alone (`step<X>(…, async () => …)` with an explicit X still takes an async fn).
    fn: ((effect: StepEffectContext & { attempt: number }) => T | Promise<Awaited<T>>) &
      ((
        effect: StepEffectContext & { attempt: number },
      ) => Json<Awaited<T>> | Promise<Json<Awaited<T>>>),
    options?: StepOptions,
  ): Promise<Awaited<T>>;
  /**
   * A record of something the flow decided: `fn` runs at once, with no start record and no
   * durability barrier before it; its result is recorded as the step's outcome and made durable
   * with the execution's next write, before anything that depends on it leaves the execution. A
   * replay returns the record. A crash before it is durable runs `fn` again, so use it for
   * decisions that may be made twice (a verdict, a plan over values the flow has), never for
   * an effect on the outside world: that is a `step`. Never retried; no middleware (ADR 0066).
   * `fn`'s `effect.onDurable(callback)` runs the callback once the record is in the log.
   *
   * @example
   * const plan = await ctx.record('plan', () => (input.total > 100 ? 'review' : 'ship'));
   */
  record<T>(
    name: string,
    fn: ((effect: RecordEffectContext) => T | Promise<Awaited<T>>) &
      ((effect: RecordEffectContext) => Json<Awaited<T>> | Promise<Json<Awaited<T>>>),
  ): Promise<Awaited<T>>;
  /** An exactly-once step writing to the log's own database (SQLite, Postgres). */
  transaction<T>(name: string, work: (tx: TransactionHandle) => T | Promise<T>): Promise<T>;
  /** Durable sleep: `ctx.sleep('3d')`, `ctx.sleep(5_000)`. The execution suspends while it waits. */
  sleep(duration: Duration): Promise<void>;
  /** Durable sleep until an instant. */
  sleepUntil(at: Date | number): Promise<void>;
  /**
   * Wait for a signal. Earlier signals are kept in order. With `timeout`, resolves
   * `{ received: false }` once it passes. With `schema`, the payload is validated (and
   * transformed) on receipt; a payload the schema refuses fails the execution. `kind` labels the
   * wait for operators while it blocks (`loom runs --waiting approval`): `signal` (the default),
   * `approval` or `question` (a signal a person answers); it changes nothing else.
   */
  waitForSignal<T = JsonValue>(
    name: string,
    options?: { timeout?: Duration; schema?: StandardSchemaV1<unknown, T>; kind?: SignalWaitKind },
  ): Promise<Received<T>>;
  /**
   * Wait for a signal made with `defineSignal`: its name, and its schema validating (and
   * transforming) the payload on receipt, so the payload is typed as the schema's output. A
   * payload the schema refuses fails the execution with `INVALID_SIGNAL`.
   *
   * @example
   * const approval = defineSignal('approve', z.object({ by: z.string() }));
   * const decision = await ctx.waitForSignal(approval, { timeout: '2d' });
   * if (decision.received) console.log(decision.payload.by);
   */
  waitForSignal<S extends StandardSchemaV1>(
    signal: SignalDefinition<string, S>,
    options?: { timeout?: Duration; kind?: SignalWaitKind },
  ): Promise<Received<InferOutput<S>>>;
  /**
   * Answer `query` (made with `defineQuery`) with `handler` from now on: `runtime.query` calls it
   * over the flow's state as a read-only replay of the log rebuilds it (ADR 0061). The handler
   * must be synchronous and must not change the flow's state or call `ctx`; a later
   * registration of the same query replaces it.
   *
   * @example
   * let done = 0;
   * ctx.onQuery(progress, () => ({ done }));
   */
  onQuery<A, R>(query: QueryDefinition<string, A, R>, handler: (arg: A) => R): void;
  /**
   * Wait for the next update (made with `defineUpdate`) sent with `runtime.update`; earlier
   * ones are kept in order, each taken once. With `timeout`, resolves `{ received: false }`
   * once it passes. Answer it with `answer(result)`: the caller's `runtime.update` resolves with
   * that result, whichever process drives the execution by then.
   *
   * @example
   * const request = await ctx.waitForUpdate(addItem);
   * if (request.received) await request.answer({ count: ++count });
   */
  waitForUpdate<A, R>(
    update: UpdateDefinition<string, A, R>,
    options?: { timeout?: Duration },
  ): Promise<ReceivedUpdate<A, R>>;
  /** Run a child flow and wait for its output (`CHILD_FAILED` if it fails). */
  child<I, O>(
    flow: WorkflowDefinition<I, O>,
    input: I,
    options?: { executionId?: string },
  ): Promise<O>;
  /**
   * End this execution and continue as a fresh one with `input`. Never returns: it unwinds the
   * flow with a `ContinuedAsNew` signal (not an error code); rethrow it if you catch it.
   */
  continueAsNew(input: unknown): Promise<never>;
  /**
   * Wait durably for the first event to reach it named `name` (`runtime.publish`), published after
   * the wait started, whose fields equal `match` (`{ 'data.orderId': 'o-7' }`), or `{ received: false }`
   * once `timeout` passes. The name must be listed in the flow's `waitsForEvents`. The execution
   * suspends while it waits; an event published while no worker runs wakes it when one does.
   * The wait is a child execution (`loom.wait:<name>:<executionId>.<n>`, ADR 0060).
   *
   * Error codes: `INVALID_ARGUMENT` (an undeclared or bad name, a bad match or timeout).
   *
   * @example
   * const paid = await ctx.waitForEvent<{ orderId: string }>('shop/order.paid', {
   *   match: { 'data.orderId': input.orderId },
   *   timeout: '1d',
   * });
   * if (!paid.received) return 'expired';
   */
  waitForEvent<D = JsonValue>(
    name: string,
    options?: WaitForEventOptions,
  ): Promise<EventReceived<D>>;
  /** Epoch ms, recorded on first run and replayed. */
  now(): number;
  /** In [0, 1), recorded and replayed. */
  random(): number;
  /** A UUID, recorded and replayed. */
  uuid(): string;
  /** New code path for executions that reach here with the patch deployed (see ADR 0005). */
  patched(id: string): boolean;
}

/**
 * Wraps the kernel's context into the flow author's. `flow` names the flow, and `waitsForEvents`
 * lists the event names it declared (`ctx.waitForEvent` refuses others).
 */
export function workflowContext(
  ctx: FlowContext,
  flow = '',
  waitsForEvents: readonly string[] = [],
): WorkflowContext {
  return new FlowAuthorContext(ctx, flow, waitsForEvents);
}

/** `signal` of every FlowAuthorContext: one accessor, so their objects share one shape. */
let flowAuthorContextSignal: PropertyDescriptor;

/**
 * The flow author's context: one class, so its object keeps fast properties (an object literal
 * with a getter is a dictionary, a hash table per execution). The operations stay own closures,
 * so a flow may take one off its context (`const { step } = ctx`); the kernel makes the
 * execution's AbortSignal only when someone reads `signal`.
 */
class FlowAuthorContext implements WorkflowContext {
  /**
   * An own enumerable accessor, one getter for every object of the class (so they share one
   * shape), called only when read: a spread (`{ ...ctx }`, as middleware pass contexts on)
   * carries it.
   */
  declare readonly signal: AbortSignal;
  static {
    flowAuthorContextSignal = {
      get(this: FlowAuthorContext): AbortSignal {
        return this.#kernel.signal;
      },
      enumerable: true,
      configurable: true,
    };
  }
  readonly executionId: string;
  readonly #kernel: FlowContext;
  readonly step: WorkflowContext['step'];
  readonly record: WorkflowContext['record'];
  readonly transaction: WorkflowContext['transaction'];
  readonly sleep: WorkflowContext['sleep'];
  readonly sleepUntil: WorkflowContext['sleepUntil'];
  readonly waitForSignal: WorkflowContext['waitForSignal'];
  readonly onQuery: WorkflowContext['onQuery'];
  readonly waitForUpdate: WorkflowContext['waitForUpdate'];
  readonly waitForEvent: WorkflowContext['waitForEvent'];
  readonly child: WorkflowContext['child'];
  readonly continueAsNew: WorkflowContext['continueAsNew'];
  readonly now: WorkflowContext['now'];
  readonly random: WorkflowContext['random'];
  readonly uuid: WorkflowContext['uuid'];
  readonly patched: WorkflowContext['patched'];

  constructor(ctx: FlowContext, flow: string, waitsForEvents: readonly string[]) {
    this.executionId = ctx.executionId;
    this.#kernel = ctx;
    Object.defineProperty(this, 'signal', flowAuthorContextSignal);
    // Numbers this run's event waits (their ids), in call order: a replay counts them the same way.
    let waitCount = 0;
    // The Json check is the signature's job; the kernel checks the value again when it records it.
    this.step = ((
      name: string,
      fn: (effect: StepEffectContext & { attempt: number }) => unknown,
      options?: StepOptions,
    ) => {
      const chain = stepMiddleware(name, options);
      const effect =
        chain === undefined
          ? fn
          : (effect: StepEffectContext) =>
              // A middleware may hand down a context of its own making: the step's clock and
              // attempt (counted by the kernel, from the log) stay.
              wrapEffect(chain, (attempt) => fn(stepAttempt(attempt, effect)))(effect);
      return ctx.step(name, effect, kernelStepOptions(options));
    }) as WorkflowContext['step'];
    this.record = ((name: string, fn: (effect: RecordEffectContext) => unknown) =>
      ctx.record(name, fn)) as WorkflowContext['record'];
    this.transaction = (name, work) => ctx.transaction(name, work);
    this.sleep = (duration) => ctx.sleep(parseDuration(duration, 'sleep'));
    this.sleepUntil = (at) => ctx.sleepUntil(instant(at));
    this.waitForSignal = ((target: string | SignalDefinition, options?: SignalWaitOptions) =>
      waitForSignal(ctx, target, options)) as WorkflowContext['waitForSignal'];
    this.onQuery = (query, handler) => {
      if (typeof handler !== 'function' || typeof query?.name !== 'string') {
        throw new LoomError(
          WorkflowErrorCode.INVALID_ARGUMENT,
          'ctx.onQuery takes a query made with defineQuery and a function',
          { path: 'onQuery' },
        );
      }
      registerQueryHandler(ctx, query.name, handler as (arg: unknown) => unknown);
    };
    this.waitForUpdate = (update, options) => waitForUpdate(ctx, update, options);
    this.waitForEvent = (name, options) =>
      waitForEvent(ctx, () => waitCount++, waitsForEvents, flow, name, options);
    this.child = (flow, input, options) => ctx.child(flow, input, options);
    this.continueAsNew = (input) => ctx.continueAsNew(input);
    this.now = () => ctx.now();
    this.random = () => ctx.random();
    this.uuid = () => ctx.uuid();
    this.patched = (id) => ctx.patched(id);
  }
}

/** What `ctx.waitForSignal` takes besides its signal. */
interface SignalWaitOptions {
  timeout?: Duration;
  schema?: StandardSchemaV1<unknown, unknown>;
  kind?: SignalWaitKind;
}

/** `ctx.waitForSignal`: the kernel's wait, its payload checked by the signal's schema. */
async function waitForSignal<T>(
  ctx: FlowContext,
  target: string | SignalDefinition,
  options: SignalWaitOptions | undefined,
): Promise<Received<T>> {
  const name = isSignalDefinition(target) ? target.name : target;
  const schema = (isSignalDefinition(target) ? target.schema : options?.schema) as
    | StandardSchemaV1<unknown, T>
    | undefined;
  const wait = await ctx.waitForSignal(name, {
    ...(options?.timeout === undefined
      ? {}
      : { timeoutMs: parseDuration(options.timeout, 'timeout') }),
    ...(options?.kind === undefined ? {} : { kind: options.kind }),
  });
  if (!wait.received || schema === undefined) return wait as Received<T>;
  const checked = await validate(schema, wait.payload);
  if (!checked.ok) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_SIGNAL,
      `signal '${name}' #${wait.signalId} has a payload its schema refuses: ${checked.message}`,
      { signal: name, signalId: wait.signalId, issues: checked.issues },
    );
  }
  return { received: true, payload: checked.value, signalId: wait.signalId };
}

/** `ctx.waitForUpdate`: an inbox signal carrying `{ updateId, arg }`, answered by a step. */
async function waitForUpdate<A, R>(
  ctx: FlowContext,
  update: UpdateDefinition<string, A, R>,
  options: { timeout?: Duration } | undefined,
): Promise<ReceivedUpdate<A, R>> {
  if (!isUpdateDefinition(update)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      'ctx.waitForUpdate takes an update made with defineUpdate',
      { path: 'update' },
    );
  }
  const wait = await ctx.waitForSignal(
    updateSignalName(update.name),
    options?.timeout === undefined
      ? undefined
      : { timeoutMs: parseDuration(options.timeout, 'timeout') },
  );
  if (!wait.received) return { received: false };
  const request = wait.payload as { updateId?: unknown; arg?: unknown } | null;
  if (typeof request?.updateId !== 'string') {
    throw new LoomError(
      WorkflowErrorCode.INVALID_UPDATE,
      `update '${update.name}' #${wait.signalId} has no update id: it was sent as a plain signal, not with runtime.update`,
      { update: update.name, signalId: wait.signalId },
    );
  }
  const updateId = request.updateId;
  return {
    received: true,
    updateId,
    arg: (request.arg ?? undefined) as A,
    answer: async (result: R) => {
      let value: unknown = result;
      if (update.result !== undefined) {
        const checked = await validate(update.result, result);
        if (!checked.ok) {
          throw new LoomError(
            WorkflowErrorCode.INVALID_UPDATE,
            `the answer to update '${update.name}' (${updateId}) is refused by its result schema: ${checked.message}`,
            { update: update.name, updateId, issues: checked.issues },
          );
        }
        value = checked.value;
      }
      await ctx.step(updateAnswerStep(updateId), () => (value ?? null) as JsonValue);
    },
  };
}

/**
 * What a step's effect gets from its middleware chain: the context the chain handed down, its
 * `signal` read only when the effect reads it (the timeout middleware makes its derived signal,
 * an AbortController, on that first read; a spread would read it here), with the step's clock and
 * attempt.
 */
function stepAttempt(
  from: AttemptContext,
  step: StepEffectContext,
): StepEffectContext & { attempt: number } {
  const context = new AttemptEffect(from) as unknown as Record<string, unknown>;
  for (const key in from) {
    if (key !== 'signal' && Object.hasOwn(from, key)) {
      context[key] = (from as unknown as Record<string, unknown>)[key];
    }
  }
  context.clock = from.clock ?? step.clock;
  context.attempt = step.attempt;
  return context as unknown as StepEffectContext & { attempt: number };
}

/** `signal` of every AttemptEffect: one accessor, so their objects share one shape. */
let attemptEffectSignal: PropertyDescriptor;

/**
 * The object `stepAttempt` fills: one class, so it keeps fast properties (a literal with a getter
 * is a dictionary); its `signal` reads the context the chain handed down.
 */
class AttemptEffect {
  /**
   * An own enumerable accessor, one getter for every object of the class (so they share one
   * shape), called only when read: a spread (`{ ...ctx }`, as middleware pass contexts on)
   * carries it.
   */
  declare readonly signal: AbortSignal;
  static {
    attemptEffectSignal = {
      get(this: AttemptEffect): AbortSignal {
        return this.#from.signal;
      },
      enumerable: true,
      configurable: true,
    };
  }
  readonly #from: AttemptContext;
  constructor(from: AttemptContext) {
    this.#from = from;
    Object.defineProperty(this, 'signal', attemptEffectSignal);
  }
}

/** The kernel's options for a step: its idempotence and its retry policy (a terminalError() stops it). */
function kernelStepOptions(
  options: StepOptions | undefined,
): { idempotent?: boolean; retry?: StepRetryPolicy | false } | undefined {
  if (options === undefined) return undefined;
  const kernel: { idempotent?: boolean; retry?: StepRetryPolicy | false } = {};
  if (options.idempotent === true) kernel.idempotent = true;
  if (options.retry !== undefined) kernel.retry = stopOnTerminal(options.retry);
  return kernel;
}

/**
 * A retry policy that never retries a `terminalError()` (code `TERMINAL`), whatever its own
 * `retryable` says. `false` and a non-object pass through (the kernel checks the policy).
 */
export function stopOnTerminal<P extends StepRetryPolicy | false>(policy: P): P {
  if (typeof policy !== 'object' || policy === null) return policy;
  const retryable = policy.retryable;
  return {
    ...policy,
    retryable: (error: unknown) =>
      !isTerminalError(error) && (retryable === undefined || retryable(error)),
  };
}

/**
 * Timeout middleware by its ms, shared by every step with that timeout (it keeps nothing between
 * calls): an agent's tool steps all pass the tool's timeout, and building the middleware (its
 * options checked, its clock resolved) per call was a cost per turn. Bounded: a flow that makes
 * up a new timeout per step gets a fresh middleware past {@link timeoutsCachedMax}.
 */
const timeoutsByMs = new Map<number, EffectMiddleware>();
const timeoutsCachedMax = 256;

function timeoutOf(ms: number): EffectMiddleware {
  let timeout = timeoutsByMs.get(ms);
  if (timeout === undefined) {
    timeout = timeoutMiddleware({ ms });
    if (timeoutsByMs.size < timeoutsCachedMax) timeoutsByMs.set(ms, timeout);
  }
  return timeout;
}

function stepMiddleware(
  name: string,
  options: StepOptions | undefined,
): EffectMiddleware | undefined {
  if (options === undefined) return undefined;
  const { middleware, timeout } = options;
  if (timeout === undefined && (middleware === undefined || middleware.length === 0)) {
    return undefined;
  }
  // The kernel retries (durably) around this chain, so the step's own middleware (logging,
  // timing, tracing, rate limits) runs once per attempt and sees each attempt's error; the
  // timeout innermost, so each attempt gets the whole timeout and the middleware sees a TIMEOUT
  // like any other failure.
  const timeoutLast =
    timeout === undefined
      ? undefined
      : timeoutOf(parseDuration(timeout, `timeout of step '${name}'`));
  if (middleware === undefined || middleware.length === 0) return timeoutLast;
  return timeoutLast === undefined
    ? composeMiddleware(...middleware)
    : composeMiddleware(...middleware, timeoutLast);
}

function instant(at: Date | number): number {
  const ms = at instanceof Date ? at.getTime() : at;
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `sleepUntil needs a valid date or epoch ms, got ${String(at)}`,
      {
        actual: String(at),
      },
    );
  }
  return ms;
}
