import { describe, expect, it } from 'vitest';
import { ErrorCode, LoomError } from '../../errors.js';
import type { LeaseStore } from '../../lease-store.js';
import { leaseStoreConformance } from '../../testing/lease-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { InMemoryLeaseStore } from './in-memory-lease-store.js';

/** One process, one heap: the "other handle" is a view on the same store that closes alone. */
function peerOf(store: InMemoryLeaseStore): LeaseStore {
  let closed = false;
  const guard = <T>(call: () => Promise<T>): Promise<T> =>
    closed
      ? Promise.reject(new LoomError(ErrorCode.STORE_CLOSED, 'the memory lease peer is closed'))
      : call();
  return {
    acquireMany: (owner, ids, ttlMs) => guard(() => store.acquireMany(owner, ids, ttlMs)),
    renewMany: (owner, ids, ttlMs) => guard(() => store.renewMany(owner, ids, ttlMs)),
    releaseMany: (owner, ids) => guard(() => store.releaseMany(owner, ids)),
    get: (id) => guard(() => store.get(id)),
    claimNode: (nodeId) => guard(() => store.claimNode(nodeId)),
    liveNodes: (nodeIds) => guard(() => store.liveNodes(nodeIds)),
    countLiveNodes: () => guard(() => store.countLiveNodes()),
    close: async () => {
      closed = true;
    },
  };
}

leaseStoreConformance('memory', async () => {
  const clock = new ManualClock();
  const store = new InMemoryLeaseStore({ clock });
  return { store, clock, openPeer: async () => peerOf(store), close: () => store.close() };
});

describe('InMemoryLeaseStore', () => {
  it('judges expiry by the wall clock when given no clock', async () => {
    const store = new InMemoryLeaseStore();
    const before = Date.now();
    await store.acquireMany('node-a', ['wall'], 60_000);
    const lease = await store.get('wall');
    expect(lease?.expiresAtMs).toBeGreaterThanOrEqual(before + 60_000);
    expect(lease?.expiresAtMs).toBeLessThanOrEqual(Date.now() + 60_000);
    await store.close();
  });
});
