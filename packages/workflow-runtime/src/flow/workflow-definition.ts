import type { Flow } from '@loom/event-runtime';
import type { StandardSchemaV1 } from './standard-schema.js';

/** The signals a flow declares: name → schema of the payload a sender passes. */
export type SignalSchemas = Readonly<Record<string, StandardSchemaV1>>;

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
