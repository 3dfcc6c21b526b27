import { liveStoreConformance } from '../../testing/live-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { InMemoryLiveStore } from './in-memory-live-store.js';

liveStoreConformance('memory', async () => {
  const clock = new ManualClock(1_000);
  const store = new InMemoryLiveStore({ clock });
  // One process: every runtime on a memory backend shares its one store.
  return { store, clock, openPeer: async () => store, close: () => store.close() };
});
