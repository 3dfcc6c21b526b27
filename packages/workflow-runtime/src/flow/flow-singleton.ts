import { LoomError, WorkflowErrorCode } from '../errors.js';
import { flowKeyOf } from './flow-key.js';
import { singletonCancelPrefix } from './singleton-cancel.js';

/**
 * One run per key at a time (Inngest's `singleton: { key, mode }`). `mode: 'skip'`: while a queued
 * run of this flow with the key is unfinished (waiting or running), enqueueing another with the
 * same key starts nothing and answers the existing run (`duplicate: true`, its `itemId`).
 * `mode: 'cancel'`: enqueueing another writes a new run, which cancels the unfinished one (its
 * cancel reason names the newer item and run) and runs once it ended; never two run at once.
 */
export interface FlowSingleton<I> {
  /**
   * The key of an input (an account, a document): called once at `runtime.enqueue`, after the
   * input schema. A non-empty string; with the flow's name it is at most
   * `Limits.queueKeyLengthMax` characters (the queue item's dedupe key is
   * `singleton:<len>:<flow>:<key>`).
   */
  key: (input: I) => string;
  /**
   * `'skip'`: the newer start is skipped and answered with the running one. `'cancel'`: the newer
   * start replaces the unfinished one (a running one is cancelled, a waiting one finishes as
   * cancelled without starting) and runs after it.
   */
  mode: 'skip' | 'cancel';
}

/**
 * A `singleton` option: `{ key: function, mode: 'skip' | 'cancel' }`, and no `concurrency` beside
 * `mode: 'cancel'` (which keys its runs by a partition of its own), else INVALID_ARGUMENT.
 */
export function checkSingleton(
  flow: string,
  singleton: unknown,
  others: { concurrency?: unknown } = {},
): void {
  const refuse = (path: string, what: string, actual: unknown): never => {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}': ${path} must be ${what}, got ${describe(actual)}`,
      { flow, path, actual: typeof actual === 'function' ? 'function' : actual },
    );
  };
  if (typeof singleton !== 'object' || singleton === null) {
    refuse('singleton', "an object { key, mode: 'skip' | 'cancel' }", singleton);
  }
  const { key, mode } = singleton as { key?: unknown; mode?: unknown };
  if (typeof key !== 'function') {
    refuse('singleton.key', 'a function of the input returning the key', key);
  }
  if (mode !== 'skip' && mode !== 'cancel') {
    refuse('singleton.mode', "'skip' or 'cancel'", mode);
  }
  if (mode === 'cancel' && others.concurrency !== undefined) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow}' declares both concurrency and singleton mode 'cancel': the singleton already ` +
        'runs one per key (a partition of its own, limit 1); keep one',
      { flow, path: 'singleton.mode' },
    );
  }
}

/**
 * The queue key of an item of `flow`: with `mode: 'skip'` its dedupe key
 * `singleton:<len>:<flow>:<key(input)>`; with `mode: 'cancel'` its partition
 * `singleton-cancel:<len>:<flow>:<key(input)>` of limit 1; nothing for a flow without `singleton`.
 * Throws `INVALID_FLOW_KEY` for a key function that throws, returns no non-empty string, or one
 * too long for a key; `INVALID_ARGUMENT` when the caller passes its own `dedupeKey` (skip) or
 * `partitionKey` (cancel) as well.
 */
export function singletonOf(
  flow: { name: string; options: { singleton?: FlowSingleton<never> } },
  input: unknown,
  caller: { dedupeKey?: string | undefined; partitionKey?: string | undefined },
): { dedupeKey?: string; partitionKey?: string; partitionConcurrencyMax?: number } {
  const singleton = flow.options.singleton;
  if (singleton === undefined) return {};
  const cancel = singleton.mode === 'cancel';
  if (cancel && caller.partitionKey !== undefined) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow.name}' keys its runs by its singleton.key: drop the partitionKey option`,
      { flow: flow.name, path: 'partitionKey' },
    );
  }
  if (!cancel && caller.dedupeKey !== undefined) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `flow '${flow.name}' dedupes its runs by its singleton.key: drop the dedupeKey option`,
      { flow: flow.name, path: 'dedupeKey' },
    );
  }
  const full = flowKeyOf(
    flow.name,
    'singleton',
    singleton.key,
    input,
    cancel ? singletonCancelPrefix : 'singleton:',
  );
  return cancel ? { partitionKey: full, partitionConcurrencyMax: 1 } : { dedupeKey: full };
}

function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}
