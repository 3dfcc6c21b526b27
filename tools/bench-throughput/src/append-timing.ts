import type { EventStore } from '@loom/event-runtime';

/**
 * Adds up the wall time spent inside a store's `append`, `appendBatch` and `transact`, summed over concurrent
 * calls: the "write" side of the effect/write attribution (P11). `wrap` returns the store itself
 * behind a Proxy that times those methods and forwards everything else untouched, so the
 * wrapper keeps up with the EventStore interface as it grows.
 */
export class AppendTiming {
  /**
   * Milliseconds inside append/transact, summed over calls (overlapping calls both count; a batch
   * counts once per execution in it).
   */
  appendMs = 0;
  appends = 0;

  wrap<S extends EventStore>(store: S): S {
    // `executions`: how many executions' appends one call carries (each of them waits for it).
    const timed = (
      method: (...args: unknown[]) => Promise<unknown>,
      executions: (args: unknown[]) => number = () => 1,
    ) => {
      return async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await method.apply(store, args);
        } finally {
          const carried = executions(args);
          this.appendMs += (performance.now() - started) * carried;
          this.appends += carried;
        }
      };
    };
    const append = timed(store.append as never);
    const transact =
      typeof (store as { transact?: unknown }).transact === 'function'
        ? timed((store as unknown as { transact: never }).transact)
        : undefined;
    // One write for many executions (a runtime's group commit): each of them waited for it.
    const appendBatch =
      typeof (store as { appendBatch?: unknown }).appendBatch === 'function'
        ? timed(
            (store as unknown as { appendBatch: never }).appendBatch,
            (args) => (args[0] as unknown[]).length,
          )
        : undefined;
    return new Proxy(store, {
      get(target, property) {
        if (property === 'append') return append;
        if (property === 'transact' && transact !== undefined) return transact;
        if (property === 'appendBatch' && appendBatch !== undefined) return appendBatch;
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}
