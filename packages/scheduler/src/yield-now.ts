/**
 * Gives the thread back for one macrotask turn (`setImmediate`): I/O callbacks, timers that are
 * due and other tasks run before it resolves. A scheduler cannot pre-empt; call this inside a
 * long synchronous stretch (a loop over 100,000 items) so other work is not starved. An
 * `await` of a resolved promise does not do this: it only lets other microtasks run.
 *
 * @example
 * for (const [i, row] of rows.entries()) {
 *   index(row);
 *   if (i % 1000 === 999) await yieldNow();
 * }
 */
export function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
