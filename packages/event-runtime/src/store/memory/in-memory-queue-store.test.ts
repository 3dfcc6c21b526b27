import { ErrorCode, LoomError } from '../../errors.js';
import type { QueueStore } from '../../queue-store.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { queueStoreConformance } from '../../testing/queue-store-conformance.js';
import { InMemoryQueueStore } from './in-memory-queue-store.js';

/** One process, one heap: the "other handle" is a view on the same store that closes alone. */
function peerOf(store: InMemoryQueueStore): QueueStore {
  let closed = false;
  const guard = <T>(call: () => Promise<T>): Promise<T> =>
    closed
      ? Promise.reject(new LoomError(ErrorCode.STORE_CLOSED, 'the memory queue peer is closed'))
      : call();
  return {
    enqueue: (input) => guard(() => store.enqueue(input)),
    claim: (queue, options) => guard(() => store.claim(queue, options)),
    renew: (queue, owner, ids, ttlMs) => guard(() => store.renew(queue, owner, ids, ttlMs)),
    complete: (queue, ids, outcome) => guard(() => store.complete(queue, ids, outcome)),
    get: (queue, id) => guard(() => store.get(queue, id)),
    unfinishedOfPartition: (queue, key) => guard(() => store.unfinishedOfPartition(queue, key)),
    queueStats: (queue) => guard(() => store.queueStats(queue)),
    listQueues: (options) => guard(() => store.listQueues(options)),
    close: async () => {
      closed = true;
    },
  };
}

queueStoreConformance('memory', async () => {
  const clock = new ManualClock();
  const store = new InMemoryQueueStore({ clock });
  return { store, clock, openPeer: async () => peerOf(store), close: () => store.close() };
});
