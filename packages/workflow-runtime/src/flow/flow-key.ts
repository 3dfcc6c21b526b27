/**
 * The queue key of `key` (what a flow's `singleton.key`, `debounce.key` or `idempotency.key`
 * returned) scoped to the flow: `<length of the name>:<flow>:<key>`. A flow's name may contain
 * ':', so `<flow>:<key>` alone would give flow `a` with key `b:c` and flow `a:b` with key `c` one
 * queue key, and one flow's start would cancel, replace or dedupe the other's.
 */
export function flowScopedKey(flow: string, key: string): string {
  return `${flow.length}:${flow}:${key}`;
}
