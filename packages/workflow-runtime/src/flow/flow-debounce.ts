import { Limits } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import { flowKeyOf } from './flow-key.js';

/**
 * Debounce by key (Inngest's `debounce: { key, period, timeout }`): queued runs of this flow whose
 * input maps to one key collapse while none has started. The first enqueue of a key writes an
 * item due `periodMs` later; every enqueue of the key before a worker claims it replaces its input
 * with the newer one and pushes its due time to `now + periodMs` (never past the first enqueue +
 * `maxWaitMs`). So the run starts once, with the last input, after `periodMs` without a newer
 * enqueue. An enqueue after the run started begins a new debounced item.
 */
export interface FlowDebounce<I> {
  /**
   * The key of an input (a document, a user): called once at `runtime.enqueue`, after the input
   * schema. A non-empty string; with the flow's name it is at most `Limits.queueKeyLengthMax`
   * characters (the item's debounce key is `<len>:<flow>:<key>`).
   */
  key: (input: I) => string;
  /** How long a key must stay quiet before its run starts, in ms: a positive integer up to `Limits.queueThrottleWindowMsMax`. */
  periodMs: number;
  /**
   * The longest a run may be pushed back after the first enqueue of its key, in ms: at least
   * `periodMs`, at most `Limits.queueThrottleWindowMsMax`. Default: no cap (a key enqueued more
   * often than every `periodMs` never starts).
   */
  maxWaitMs?: number;
}

/**
 * A `debounce` option: `{ key: function, periodMs, maxWaitMs? }` with `maxWaitMs >= periodMs`,
 * and neither `singleton` nor `idempotency` beside it (they answer a pending run unchanged, where
 * a debounce replaces its input), else INVALID_ARGUMENT.
 */
export function checkDebounce(
  flow: string,
  debounce: unknown,
  others: { singleton?: unknown; idempotency?: unknown },
): void {
  const refuse = (path: string, what: string, actual: unknown): never => {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}': ${path} must be ${what}, got ${describe(actual)}`,
      { flow, path, actual: typeof actual === 'function' ? 'function' : actual },
    );
  };
  if (typeof debounce !== 'object' || debounce === null) {
    refuse('debounce', 'an object { key, periodMs, maxWaitMs? }', debounce);
  }
  const { key, periodMs, maxWaitMs } = debounce as {
    key?: unknown;
    periodMs?: unknown;
    maxWaitMs?: unknown;
  };
  if (typeof key !== 'function') {
    refuse('debounce.key', 'a function of the input returning the key', key);
  }
  const window = `a positive integer of at most ${Limits.queueThrottleWindowMsMax} (30 days)`;
  if (!isWindow(periodMs)) refuse('debounce.periodMs', window, periodMs);
  if (maxWaitMs !== undefined) {
    if (!isWindow(maxWaitMs)) refuse('debounce.maxWaitMs', window, maxWaitMs);
    if ((maxWaitMs as number) < (periodMs as number)) {
      refuse('debounce.maxWaitMs', `at least debounce.periodMs (${periodMs})`, maxWaitMs);
    }
  }
  for (const other of ['singleton', 'idempotency'] as const) {
    if (others[other] !== undefined) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `flow '${flow}' declares both debounce and ${other}: a debounced enqueue replaces the ` +
          `pending run's input, where ${other} answers it unchanged; keep one`,
        { flow, path: 'debounce' },
      );
    }
  }
}

function isWindow(value: unknown): value is number {
  return (
    typeof value === 'number' &&
    Number.isSafeInteger(value) &&
    value > 0 &&
    value <= Limits.queueThrottleWindowMsMax
  );
}

/**
 * The queue debounce of an item of `flow`: `<len>:<flow>:<key(input)>` with the flow's period and max
 * wait, or nothing for a flow without `debounce`. Throws `INVALID_FLOW_KEY` for a key function
 * that throws, returns no non-empty string, or one too long with the flow's name;
 * `INVALID_ARGUMENT` when the caller passes its own `dedupeKey` as well.
 */
export function debounceOf(
  flow: { name: string; options: { debounce?: FlowDebounce<never> } },
  input: unknown,
  dedupeKey: string | undefined,
): { debounce?: { key: string; periodMs: number; maxWaitMs?: number } } {
  const debounce = flow.options.debounce;
  if (debounce === undefined) return {};
  if (dedupeKey !== undefined) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow.name}' collapses its runs by its debounce.key: drop the dedupeKey option`,
      { flow: flow.name, path: 'dedupeKey' },
    );
  }
  const full = flowKeyOf(flow.name, 'debounce', debounce.key, input);
  return {
    debounce: {
      key: full,
      periodMs: debounce.periodMs,
      ...(debounce.maxWaitMs === undefined ? {} : { maxWaitMs: debounce.maxWaitMs }),
    },
  };
}

function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}
