import type { FlowContext } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { checkTags } from '../placement/placement.js';
import { checkDebounce } from './flow-debounce.js';
import { checkIdempotency } from './flow-idempotency.js';
import { checkSingleton } from './flow-singleton.js';
import { checkThrottle, flowControlNameOf } from './flow-throttle.js';
import type { Json } from './json.js';
import { checkCancelOn, checkTrigger, checkWaitsForEvents } from './published-event.js';
import { validate } from './standard-schema.js';
import { type WorkflowContext, workflowContext } from './workflow-context.js';
import type { FlowOptions, SignalSchemas, WorkflowDefinition } from './workflow-definition.js';

export type { FlowDebounce } from './flow-debounce.js';
export type { FlowIdempotency } from './flow-idempotency.js';
export type { FlowSingleton } from './flow-singleton.js';
export type { FlowThrottle } from './flow-throttle.js';
export type {
  FlowCancelOn,
  FlowConcurrency,
  FlowOptions,
  FlowTrigger,
  SignalSchemas,
  WorkflowDefinition,
} from './workflow-definition.js';

const namePattern = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;

/**
 * Define a durable flow. The function gets a {@link WorkflowContext} (steps with retries and
 * timeouts, durable time, signals, children, continue-as-new, recorded values, patches).
 *
 * The input and output must be JSON ({@link Json}): a `Date`, `Map`, `bigint` or class instance
 * in either is a compile error (and `PAYLOAD_NOT_JSON` at run time).
 *
 * Error codes: `INVALID_ARGUMENT` for a bad name, version, schema, `concurrency`, `throttle`,
 * `singleton`, `idempotency` or `debounce` (a key that is not a function, a limit or period that
 * is not a positive integer, a mode other than `'skip'` or `'cancel'`, `concurrency` beside
 * singleton mode `'cancel'`, a `debounce.maxWaitMs` below its
 * `periodMs`, `debounce` beside `singleton` or `idempotency`) or `trigger` (a bad event name, an `if` or
 * `idempotency` that is not a function, a trigger beside any of those flow controls).
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
  if (options.concurrency !== undefined) checkConcurrency(options.name, options.concurrency);
  if (options.throttle !== undefined) checkThrottle(options.name, options.throttle);
  if (options.singleton !== undefined) checkSingleton(options.name, options.singleton, options);
  if (options.idempotency !== undefined) checkIdempotency(options.name, options.idempotency);
  if (options.debounce !== undefined) checkDebounce(options.name, options.debounce, options);
  if (options.trigger !== undefined) {
    checkTrigger(options.name, options.trigger);
    const control = flowControlNameOf(options);
    if (control !== undefined) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `flow '${options.name}' declares both a trigger and a per-key ${control}: an event ` +
          'starts its run directly, outside any queue, so it would not hold; trigger a ' +
          'flow that enqueues the controlled one instead',
        { flow: options.name, path: 'trigger' },
      );
    }
  }
  const waitsForEvents = checkWaitsForEvents(options.name, options.waitsForEvents);
  if (options.cancelOn !== undefined) checkCancelOn(options.name, options.cancelOn);
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
      const result = await run(workflowContext(ctx, options.name, waitsForEvents), input);
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

/** A `concurrency` option: `{ key: function, limit: positive integer }`, else INVALID_ARGUMENT. */
function checkConcurrency(flow: string, concurrency: unknown): void {
  const refuse = (path: string, what: string, actual: unknown): never => {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}': ${path} must be ${what}, got ${describe(actual)}`,
      { flow, path, actual: typeof actual === 'function' ? 'function' : actual },
    );
  };
  if (typeof concurrency !== 'object' || concurrency === null) {
    refuse('concurrency', 'an object { key, limit }', concurrency);
  }
  const { key, limit } = concurrency as { key?: unknown; limit?: unknown };
  if (typeof key !== 'function') {
    refuse('concurrency.key', 'a function of the input returning the key', key);
  }
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) {
    refuse('concurrency.limit', 'a positive integer', limit);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}
