import type { Flow } from '@loom/event-runtime';
import type { FlowDebounce } from './flow-debounce.js';
import type { FlowIdempotency } from './flow-idempotency.js';
import type { FlowSingleton } from './flow-singleton.js';
import type { FlowThrottle } from './flow-throttle.js';
import type { PublishedEvent } from './published-event.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/** The signals a flow declares: name → schema of the payload a sender passes. */
export type SignalSchemas = Readonly<Record<string, StandardSchemaV1>>;

/**
 * A concurrency limit per key (Inngest's `concurrency: { key, limit }`, Hatchet's
 * `concurrency: { expression, maxRuns }`, a DBOS partitioned queue): of the queued runs of this
 * flow whose input maps to one key, at most `limit` run at once across every worker of the queue.
 */
export interface FlowConcurrency<I> {
  /**
   * The key of an input (a tenant, a user): called once at `runtime.enqueue`, after the input
   * schema, and stored with the item as its `partitionKey`. A non-empty string of at most
   * `Limits.queueKeyLengthMax` characters; runs of every flow of the queue whose key is equal
   * share it.
   */
  key: (input: I) => string;
  /** The most runs of one key at once (live queue claims of every worker): a positive integer. */
  limit: number;
}

/**
 * What starts a flow when an event is published (Inngest's `{ event, if }` trigger and
 * `idempotency`): events named `event`, those `if` accepts, one run per `idempotency(event)`.
 * The flow's input is the {@link PublishedEvent}.
 */
export interface FlowTrigger<I> {
  /** The event name (`runtime.publish({ name })`) that starts a run. */
  event: string;
  /** Start a run only for events it returns true for. Default: every event of the name. */
  if?: (event: I) => boolean;
  /**
   * The key that makes a run unique (a non-empty string): the run's id is
   * `event:<len>:<flow>:<key>` (`eventRunId`, `len` the flow name's length), so a second event
   * with the same key starts nothing. Default: the event's id.
   */
  idempotency?: (event: I) => string;
}

/** What `defineFlow` takes besides the function. */
export interface FlowOptions<I, O, S extends SignalSchemas = SignalSchemas> {
  /** Stable name: the log records it and every process resolves the flow by it. */
  name: string;
  /** Pinned at start; an execution is only ever replayed by the same version. */
  version?: string;
  /** Validates (and may transform) the input before anything is written. */
  input?: StandardSchemaV1<unknown, I>;
  /** Validates the output before it is recorded; a bad output fails the execution. */
  output?: StandardSchemaV1<unknown, O>;
  /**
   * Schemas of the signals this flow accepts: senders' payloads are validated before writing, and
   * `runtime.signal(flow, id, name, payload)` only compiles for these names, with a payload of
   * the schema's input type.
   */
  signals?: S;
  /**
   * Only runtimes whose `tags` include every one of these start, resume, recover or retry its
   * executions (a runtime without them refuses with `PLACEMENT_UNSATISFIED` and leaves them to
   * recovery elsewhere). See ADR 0038.
   */
  placement?: { tags: readonly string[] };
  /**
   * At most `limit` queued runs per key at once, across every worker (see {@link FlowConcurrency}
   * and ADR 0059). Holds for runs started by a queue (`runtime.enqueue` then `runtime.work`):
   * `runtime.start` of such a flow is refused with `FLOW_CONTROL_NEEDS_QUEUE`.
   */
  concurrency?: FlowConcurrency<I>;
  /**
   * At most `limit` starts of queued runs per key per sliding window of `periodMs`, across every
   * worker (see {@link FlowThrottle} and ADR 0059): runs over it wait, none is dropped. Holds for
   * queued runs: `runtime.start` of such a flow is refused with `FLOW_CONTROL_NEEDS_QUEUE`.
   */
  throttle?: FlowThrottle<I>;
  /**
   * One queued run per key at a time (see {@link FlowSingleton} and ADR 0059). `mode: 'skip'`:
   * enqueueing another while one waits or runs starts nothing and answers the existing run.
   * `mode: 'cancel'`: enqueueing another cancels the unfinished one and runs after it. Holds for
   * queued runs: `runtime.start` of such a flow is refused with `FLOW_CONTROL_NEEDS_QUEUE`.
   */
  singleton?: FlowSingleton<I>;
  /**
   * A dedupe window for starts (see {@link FlowIdempotency} and ADR 0059): within `windowMs` of
   * the first queued run with a key, another enqueue with it answers that run. Holds for queued
   * runs: `runtime.start` of such a flow is refused with `FLOW_CONTROL_NEEDS_QUEUE`.
   */
  idempotency?: FlowIdempotency<I>;
  /**
   * Debounce by key (see {@link FlowDebounce} and ADR 0059): enqueues of a key collapse into one
   * queued run while it has not started; it starts once, with the last input, after `periodMs`
   * without a newer enqueue (at the latest `maxWaitMs` after the first). Holds for queued runs:
   * `runtime.start` of such a flow is refused with `FLOW_CONTROL_NEEDS_QUEUE`. Not beside
   * `singleton` or `idempotency`.
   */
  debounce?: FlowDebounce<I>;
  /**
   * Start a run of this flow for every event published with this name (`runtime.publish`), on
   * whichever runtime that registers this flow takes the event first; the input is the event
   * (see {@link FlowTrigger}, `docs/flows.md` and ADR 0060).
   */
  trigger?: FlowTrigger<I>;
  /**
   * The event names this flow's code waits for with `ctx.waitForEvent` (which refuses a name not
   * listed): a runtime that registers the flow delivers events of these names, so a waiting
   * execution is woken even where no flow is triggered by them (ADR 0060).
   */
  waitsForEvents?: readonly string[];
  /**
   * Cancel a running or suspended execution of this flow when a matching event is published
   * (Inngest's `cancelOn`, see {@link FlowCancelOn}): delivered by the runtimes that register this
   * flow, like a trigger.
   */
  cancelOn?: ReadonlyArray<FlowCancelOn>;
}

/**
 * An event that cancels an execution: one named `event`, published after the execution started,
 * whose fields equal the execution's input where `match` says. `match` maps a dotted path in the
 * event (`data.orderId`) to a dotted path in the input written `input.<path>` (`input.orderId`;
 * `input` alone is the whole input). Without `match` every such event cancels every execution
 * of the flow. Data, not a function, so any process can evaluate it.
 *
 * @example
 * defineFlow({ name: 'ship', cancelOn: [{ event: 'shop/order.cancelled', match: { 'data.orderId': 'input.orderId' } }] }, run);
 */
export interface FlowCancelOn {
  /** The event name (`runtime.publish({ name })`). */
  event: string;
  /** Event path → `input.<path>`: every pair must be equal for the event to cancel. */
  match?: Readonly<Record<string, string>>;
}

/**
 * A flow made with `defineFlow`: a kernel `Flow` that also carries its schemas. `S` keeps the
 * declared signals' names and schemas for typed senders.
 */
export interface WorkflowDefinition<
  I = unknown,
  O = unknown,
  S extends SignalSchemas = SignalSchemas,
> extends Flow<I, O> {
  /** The options it was defined with (input and output typed loosely, so any definition fits a list). */
  readonly options: FlowOptions<unknown, unknown, S>;
}
