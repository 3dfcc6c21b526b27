import type { EventStore } from '@loom/event-runtime';

/**
 * Adds up the wall time spent inside a store's `append` and `transact`, summed over concurrent
 * calls: the "write" side of the effect/write attribution (P11). `wrap` returns the store itself
 * behind a Proxy that times those two methods and forwards everything else untouched, so the
 * wrapper keeps up with the EventStore interface as it grows.
 */
export class AppendTiming {
  /** Milliseconds inside append/transact, summed over calls (overlapping calls both count). */
  appendMs = 0;
  appends = 0;

  wrap<S extends EventStore>(store: S): S {
    const timed = (method: (...args: unknown[]) => Promise<unknown>) => {
      return async (...args: unknown[]) => {
        const started = performance.now();
        try {
          return await method.apply(store, args);
        } finally {
          this.appendMs += performance.now() - started;
          this.appends += 1;
        }
      };
    };
    const append = timed(store.append as never);
    const transact =
      typeof (store as { transact?: unknown }).transact === 'function'
        ? timed((store as unknown as { transact: never }).transact)
        : undefined;
    return new Proxy(store, {
      get(target, property) {
        if (property === 'append') return append;
        if (property === 'transact' && transact !== undefined) return transact;
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}
