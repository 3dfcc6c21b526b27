import { Limits } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';

/**
 * The queue key of `key` (what a flow's `singleton.key`, `debounce.key` or `idempotency.key`
 * returned) scoped to the flow: `<length of the name>:<flow>:<key>`. A flow's name may contain
 * ':', so `<flow>:<key>` alone would give flow `a` with key `b:c` and flow `a:b` with key `c` one
 * queue key, and one flow's start would cancel, replace or dedupe the other's.
 */
export function flowScopedKey(flow: string, key: string): string {
  return `${flow.length}:${flow}:${key}`;
}

/**
 * Calls a flow's key function (`option` names it: `singleton`, `debounce`, `idempotency`) on an
 * input and returns `<prefix><len>:<flow>:<key>`. Throws `INVALID_FLOW_KEY` when the function
 * throws, returns no non-empty string, or one too long for a queue key with the flow's name.
 */
export function flowKeyOf(
  flow: string,
  option: string,
  keyOf: (input: never) => unknown,
  input: unknown,
  prefix = '',
): string {
  let key: unknown;
  try {
    key = (keyOf as (input: unknown) => unknown)(input);
  } catch (error) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_FLOW_KEY,
      `the ${option}.key of flow '${flow}' threw for this input: ${String(error)}`,
      { flow },
      error,
    );
  }
  if (typeof key !== 'string' || key.length === 0) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_FLOW_KEY,
      `the ${option}.key of flow '${flow}' must return a non-empty string, got ` +
        `${typeof key === 'string' ? "''" : typeof key}`,
      { flow, actual: typeof key === 'string' ? '' : typeof key },
    );
  }
  const full = `${prefix}${flowScopedKey(flow, key)}`;
  if (full.length > Limits.queueKeyLengthMax) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_FLOW_KEY,
      `the ${option}.key of flow '${flow}' returned ${key.length} characters: with the ` +
        `flow's name that is over queueKeyLengthMax (${Limits.queueKeyLengthMax}); return a ` +
        'shorter key (a hash of it, say)',
      { flow, actual: key.length },
    );
  }
  return full;
}
