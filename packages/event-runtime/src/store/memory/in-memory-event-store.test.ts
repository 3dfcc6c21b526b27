import { describe, expect, it } from 'vitest';
import { eventStoreConformance } from '../../testing/event-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { sameProcessPeer } from '../../testing/same-process-peer.js';
import { storedRows } from '../../testing/store-hooks.js';
import { InMemoryEventStore } from './in-memory-event-store.js';

let shared: InMemoryEventStore;

eventStoreConformance('memory', async () => {
  const store = new InMemoryEventStore();
  shared = store;
  return {
    store,
    // One process, one heap: the "other handle" is a view on the same store that closes alone.
    openPeer: async () => sameProcessPeer(store),
    countRows: async (executionId) => storedRows(shared, executionId).length,
    tamper: async (executionId, sequence, payloadText) => {
      const row = storedRows(shared, executionId)[sequence];
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
