import type { Flow } from '@loom/event-runtime';
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
