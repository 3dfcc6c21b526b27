import { describe, expect, it } from 'vitest';
import { eventStoreConformance } from '../../testing/event-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { InMemoryEventStore } from './in-memory-event-store.js';

let shared: InMemoryEventStore;

eventStoreConformance('memory', async () => {
  const store = new InMemoryEventStore();
  shared = store;
  return {
    store,
    // One process, one heap: the "other handle" is a view on the same store that closes alone.
    openPeer: async () => {
      let closed = false;
      const guard = <T>(call: () => Promise<T>) =>
        closed
          ? Promise.reject(Object.assign(new Error('closed'), { code: 'STORE_CLOSED' }))
          : call();
      return {
        backend: 'memory',
        fences: store.fences,
        append: (envelopes, guardArg) => guard(() => store.append(envelopes, guardArg)),
        read: (id, options) => guard(() => store.read(id, options)),
        readAll: (options) => guard(() => store.readAll(options)),
        findExecutions: (options) => guard(() => store.findExecutions(options)),
        sendSignal: (signal) => guard(() => store.sendSignal(signal)),
        readSignals: (id, options) => guard(() => store.readSignals(id, options)),
        claimDue: (nowMs, limit) => guard(() => store.claimDue(nowMs, limit)),
        subscribe: (options, handler) => store.subscribe(options, handler),
        verify: (id) => guard(() => store.verify(id)),
        close: async () => {
          closed = true;
        },
      };
    },
    countRows: async (executionId) => shared.rowsForTesting(executionId).length,
    tamper: async (executionId, sequence, payloadText) => {
      const row = shared.rowsForTesting(executionId)[sequence];
      if (row !== undefined) row.payloadText = payloadText;
    },
    close: () => store.close(),
  };
});

describe('InMemoryEventStore', () => {
  it('assigns positions 1, 2, 3, … in append order', async () => {
    const store = new InMemoryEventStore({ clock: new ManualClock(42) });
    await store.append([{ executionId: 'a', sequence: 0, type: 't', payload: null }]);
    const [event] = await store.append([{ executionId: 'b', sequence: 0, type: 't', payload: 1 }]);
    expect(event?.position).toBe(2);
    expect(event?.at).toBe(42);
  });
});
