import type { EventStore } from '../event-store.js';
import { storeClosed } from '../internal/store-errors.js';

/**
 * A second handle on a store that lives in this process (the memory store, or a store-kit
 * backend with no database behind it), for `ConformanceHarness.openPeer`: a view on the same
 * data whose `close()` closes only the view. After it, every call but `subscribe` fails with
 * `STORE_CLOSED`, like a closed connection of a durable backend.
 *
 * @example
 * eventStoreConformance('memory', async () => {
 *   const store = new InMemoryEventStore();
 *   return { store, openPeer: async () => sameProcessPeer(store), … };
 * });
 */
export function sameProcessPeer(store: EventStore): EventStore {
  let closed = false;
  const guard = <T>(call: () => Promise<T>): Promise<T> =>
    closed ? Promise.reject(storeClosed(store.backend)) : call();
  return {
    backend: store.backend,
    fences: store.fences,
    append: (envelopes, appendGuard) => guard(() => store.append(envelopes, appendGuard)),
    read: (id, options) => guard(() => store.read(id, options)),
    readAll: (options) => guard(() => store.readAll(options)),
    findExecutions: (options) => guard(() => store.findExecutions(options)),
    sendSignal: (signal) => guard(() => store.sendSignal(signal)),
    readSignals: (id, options) => guard(() => store.readSignals(id, options)),
    claimDue: (nowMs, limit, options) => guard(() => store.claimDue(nowMs, limit, options)),
    unclaimDue: (ids, nowMs) => guard(() => store.unclaimDue(ids, nowMs)),
    prune: (options) => guard(() => store.prune(options)),
    subscribe: (options, handler) => store.subscribe(options, handler),
    verify: (id) => guard(() => store.verify(id)),
    close: async () => {
      closed = true;
    },
  };
}
