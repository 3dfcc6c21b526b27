import { ErrorCode, LoomError } from '../../errors.js';
import type { SnapshotStore } from '../../snapshot-store.js';
import { snapshotStoreConformance } from '../../testing/snapshot-store-conformance.js';
import { InMemorySnapshotStore } from './in-memory-snapshot-store.js';

/** One process, one heap: the "other handle" is a view on the same store that closes alone. */
function peerOf(store: InMemorySnapshotStore): SnapshotStore {
  let closed = false;
  const guard = <T>(call: () => Promise<T>): Promise<T> =>
    closed
      ? Promise.reject(new LoomError(ErrorCode.STORE_CLOSED, 'the memory snapshot peer is closed'))
      : call();
  return {
    save: (snapshot) => guard(() => store.save(snapshot)),
    load: (id) => guard(() => store.load(id)),
    close: async () => {
      closed = true;
    },
  };
}

snapshotStoreConformance('memory', async () => {
  const store = new InMemorySnapshotStore();
  return { store, openPeer: async () => peerOf(store), close: () => store.close() };
});
