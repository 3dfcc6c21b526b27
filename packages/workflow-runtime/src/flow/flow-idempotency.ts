import { Limits } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { flowKeyOf } from './flow-key.js';

/**
 * A dedupe window for starts (Inngest's `idempotency`, with a window of your choosing): the first
 * queued run of this flow with a key opens a window of `windowMs`; until it closes, another
 * enqueue with the key writes nothing and answers that run (`duplicate: true`, its `itemId`),
 * whether it still runs or already finished.
 */
export interface FlowIdempotency<I> {
  /**
   * The key of an input (an order id, an event id): called once at `runtime.enqueue`, after the
   * input schema. A non-empty string; with the flow's name it is at most
   * `Limits.queueKeyLengthMax` characters (the item's key is `<len>:<flow>:<key>`).
   */
  key: (input: I) => string;
  /** How long the window stays open after the first enqueue, in ms: a positive integer up to `Limits.queueThrottleWindowMsMax`. */
  windowMs: number;
}

/** An `idempotency` option: `{ key: function, windowMs }`, else INVALID_ARGUMENT. */
export function checkIdempotency(flow: string, idempotency: unknown): void {
  const refuse = (path: string, what: string, actual: unknown): never => {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}': ${path} must be ${what}, got ${describe(actual)}`,
      { flow, path, actual: typeof actual === 'function' ? 'function' : actual },
    );
  };
  if (typeof idempotency !== 'object' || idempotency === null) {
    refuse('idempotency', 'an object { key, windowMs }', idempotency);
  }
  const { key, windowMs } = idempotency as { key?: unknown; windowMs?: unknown };
  if (typeof key !== 'function') {
    refuse('idempotency.key', 'a function of the input returning the key', key);
  }
  if (
    typeof windowMs !== 'number' ||
    !Number.isSafeInteger(windowMs) ||
    windowMs <= 0 ||
    windowMs > Limits.queueThrottleWindowMsMax
  ) {
    refuse(
      'idempotency.windowMs',
      `a positive integer of at most ${Limits.queueThrottleWindowMsMax} (30 days)`,
      windowMs,
    );
  }
}

/**
 * The queue dedupe window of an item of `flow`: `<len>:<flow>:<key(input)>` with the flow's window, or
 * nothing for a flow without `idempotency`. Throws `INVALID_FLOW_KEY` for a key function that
 * throws, returns no non-empty string, or one too long with the flow's name.
 */
export function idempotencyOf(
  flow: { name: string; options: { idempotency?: FlowIdempotency<never> } },
  input: unknown,
): { idempotency?: { key: string; windowMs: number } } {
  const idempotency = flow.options.idempotency;
  if (idempotency === undefined) return {};
  const full = flowKeyOf(flow.name, 'idempotency', idempotency.key, input);
  return { idempotency: { key: full, windowMs: idempotency.windowMs } };
}

function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}
