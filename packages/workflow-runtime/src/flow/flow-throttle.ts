import { Limits } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';

/**
 * A throttle per key (Inngest's `throttle: { key, limit, period }`): of the queued runs of this
 * flow whose input maps to one key, at most `limit` start per sliding window of `periodMs`,
 * across every worker of the queue. Runs over it wait in the queue and start when the window
 * has room (they are delayed, never dropped).
 */
export interface FlowThrottle<I> {
  /**
   * The key of an input (a tenant, a user): called once at `runtime.enqueue`, after the input
   * schema, and stored with the item. A non-empty string of at most `Limits.queueKeyLengthMax`
   * characters; runs of every flow of the queue whose throttle key is equal share it.
   */
  key: (input: I) => string;
  /** The most starts of one key per window: a positive integer. */
  limit: number;
  /** The sliding window, in ms: a positive integer up to `Limits.queueThrottleWindowMsMax`. */
  periodMs: number;
}

/** A `throttle` option: `{ key: function, limit, periodMs }`, else INVALID_ARGUMENT. */
export function checkThrottle(flow: string, throttle: unknown): void {
  const refuse = (path: string, what: string, actual: unknown): never => {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}': ${path} must be ${what}, got ${describe(actual)}`,
      { flow, path, actual: typeof actual === 'function' ? 'function' : actual },
    );
  };
  if (typeof throttle !== 'object' || throttle === null) {
    refuse('throttle', 'an object { key, limit, periodMs }', throttle);
  }
  const { key, limit, periodMs } = throttle as {
    key?: unknown;
    limit?: unknown;
    periodMs?: unknown;
  };
  if (typeof key !== 'function') {
    refuse('throttle.key', 'a function of the input returning the key', key);
  }
  if (!isPositiveInteger(limit)) refuse('throttle.limit', 'a positive integer', limit);
  if (!isPositiveInteger(periodMs) || periodMs > Limits.queueThrottleWindowMsMax) {
    refuse(
      'throttle.periodMs',
      `a positive integer of at most ${Limits.queueThrottleWindowMsMax} (30 days)`,
      periodMs,
    );
  }
}

/**
 * The queue throttle of an item of `flow`: `throttle.key(input)` with the flow's limit and
 * period, or nothing for a flow without one. Throws `INVALID_FLOW_KEY` for a key function that
 * throws or returns no non-empty string.
 */
export function throttleOf(
  flow: { name: string; options: { throttle?: FlowThrottle<never> } },
  input: unknown,
): { throttle?: { key: string; count: number; windowMs: number } } {
  const throttle = flow.options.throttle;
  if (throttle === undefined) return {};
  let key: unknown;
  try {
    key = (throttle.key as (input: unknown) => unknown)(input);
  } catch (error) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_FLOW_KEY,
      `the throttle.key of flow '${flow.name}' threw for this input: ${String(error)}`,
      { flow: flow.name },
      error,
    );
  }
  if (typeof key !== 'string' || key.length === 0) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_FLOW_KEY,
      `the throttle.key of flow '${flow.name}' must return a non-empty string, got ` +
        `${typeof key === 'string' ? "''" : typeof key}`,
      { flow: flow.name, actual: typeof key === 'string' ? '' : typeof key },
    );
  }
  return { throttle: { key, count: throttle.limit, windowMs: throttle.periodMs } };
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}

/**
 * The flow control a flow declares that holds only for queued runs (named for the error of
 * `runtime.start`), or undefined for none.
 */
export function flowControlNameOf(options: {
  concurrency?: unknown;
  throttle?: unknown;
  singleton?: unknown;
  idempotency?: unknown;
  debounce?: unknown;
}): string | undefined {
  if (options.concurrency !== undefined) return 'concurrency limit';
  if (options.throttle !== undefined) return 'throttle';
  if (options.singleton !== undefined) return 'singleton';
  if (options.idempotency !== undefined) return 'dedupe window (idempotency)';
  if (options.debounce !== undefined) return 'debounce';
  return undefined;
}
