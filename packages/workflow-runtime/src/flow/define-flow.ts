import type { Flow, FlowContext } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { checkTags } from '../placement/placement.js';
import type { Json } from './json.js';
import { type StandardSchemaV1, validate } from './standard-schema.js';
import { type WorkflowContext, workflowContext } from './workflow-context.js';

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

const namePattern = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;

/**
 * Define a durable flow. The function gets a {@link WorkflowContext} (steps with retries and
 * timeouts, durable time, signals, children, continue-as-new, recorded values, patches).
 *
 * The input and output must be JSON ({@link Json}): a `Date`, `Map`, `bigint` or class instance
 * in either is a compile error (and `PAYLOAD_NOT_JSON` at run time).
 *
 * Error codes: `INVALID_ARGUMENT` for a bad name, version or schema.
 *
 * @example
 * const order = defineFlow({ name: 'order', version: '1' }, async (ctx, input: { sku: string }) => {
 *   await ctx.step('reserve', () => reserve(input.sku), { retry: { attempts: 3 } });
 *   await ctx.sleep('1h');
 *   return 'done';
 * });
 */
export function defineFlow<I, O, S extends SignalSchemas = SignalSchemas>(
  options: FlowOptions<I, O, S>,
  run: ((ctx: WorkflowContext, input: I) => Promise<O>) &
    ((ctx: WorkflowContext, input: Json<I>) => Promise<Json<O>>),
): WorkflowDefinition<I, O, S> {
  if (typeof options?.name !== 'string' || !namePattern.test(options.name)) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `a flow name must be 1 to 200 letters, digits or . _ : / - (starting with a letter or digit), got ${JSON.stringify(options?.name)}`,
      { actual: options?.name },
    );
  }
  if (
    options.version !== undefined &&
    (typeof options.version !== 'string' || options.version.length === 0)
  ) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${options.name}' has an empty or non-string version`,
    );
  }
  if (options.placement !== undefined) {
    checkTags(options.placement?.tags, `placement.tags of flow '${options.name}'`);
  }
  if (typeof run !== 'function') {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${options.name}' needs a function`,
    );
  }
  const output = options.output;
  const flow: WorkflowDefinition<I, O, S> = {
    name: options.name,
    options: options as FlowOptions<unknown, unknown, S>,
    run: async (ctx: FlowContext, input: I) => {
      const result = await run(workflowContext(ctx), input);
      if (output === undefined) return result;
      const checked = await validate(output, result);
      if (!checked.ok) {
        throw new LoomError(
          WorkflowErrorCode.INVALID_OUTPUT,
          `flow '${options.name}' returned an output its schema refuses: ${checked.message}`,
          { issues: checked.issues },
        );
      }
      return checked.value;
    },
  };
  if (options.version !== undefined) (flow as { version?: string }).version = options.version;
  return flow;
}
