import type { FlowContext } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { checkTags } from '../placement/placement.js';
import type { Json } from './json.js';
import { validate } from './standard-schema.js';
import { type WorkflowContext, workflowContext } from './workflow-context.js';
import type { FlowOptions, SignalSchemas, WorkflowDefinition } from './workflow-definition.js';

export type { FlowOptions, SignalSchemas, WorkflowDefinition } from './workflow-definition.js';

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
