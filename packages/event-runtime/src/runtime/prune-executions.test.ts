import { describe, expect, it } from 'vitest';
import type { EventStore } from '../event-store.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import { InMemorySnapshotStore } from '../store/memory/in-memory-snapshot-store.js';
import { sameProcessPeer } from '../testing/same-process-peer.js';
import { type PruneReceipt, pruneExecutions, pruneReceiptLogId } from './prune-executions.js';

/** `count` executions of `events` events each, settled at `atMs`. */
async function settled(store: EventStore, prefix: string, count: number, atMs: number) {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const executionId = `${prefix}-${index}`;
    ids.push(executionId);
    await store.append(
      [
        { executionId, sequence: 0, type: 'demo.started', payload: index, at: atMs },
        { executionId, sequence: 1, type: 'demo.ended', payload: null, at: atMs },
      ],
      { status: 'settled' },
    );
  }
  return ids;
}

describe('pruneExecutions', () => {
  it('forgets the snapshots of what it removed in a snapshot store outside the log', async () => {
    const store = new InMemoryEventStore();
    const snapshots = new InMemorySnapshotStore();
    const [gone] = await settled(store, 'gone', 1, 1_000);
    await snapshots.save({ executionId: gone as string, sequence: 1, state: { n: 1 }, at: 1_000 });
    await snapshots.save({ executionId: 'other', sequence: 0, state: null, at: 1_000 });
    const report = await pruneExecutions(store, snapshots, { endedBeforeMs: 2_000 }, 5_000);
    expect(report.pruned.map((row) => row.executionId)).toEqual([gone]);
    expect(await snapshots.load(gone as string)).toBeUndefined();
    expect(await snapshots.load('other')).toMatchObject({ executionId: 'other' });
  });

  it('two prunes at once each append their own receipt, one after the other in the chain, and list disjoint executions', async () => {
    const store = new InMemoryEventStore();
    const ids = await settled(store, 'race', 6, 1_000);
    const peer = sameProcessPeer(store);
    const [first, second] = await Promise.all([
      pruneExecutions(store, undefined, { endedBeforeMs: 2_000, limit: 3 }, 5_000),
      pruneExecutions(peer, undefined, { endedBeforeMs: 2_000, limit: 3, cursor: 'race-2' }, 5_000),
    ]);
    expect([first.receiptSequence, second.receiptSequence].sort()).toEqual([0, 1]);
    const receipts = await store.read(pruneReceiptLogId);
    const listed = receipts.flatMap((event) =>
      (event.payload as unknown as PruneReceipt).executions.map((row) => row.executionId),
    );
    expect(listed.sort()).toEqual([...ids].sort());
    expect(await store.verify(pruneReceiptLogId)).toMatchObject({ ok: true, events: 2 });
    expect(await store.findExecutions({ status: 'settled' })).toEqual([]);
  });

  it('on a dry run reads and verifies but writes nothing', async () => {
    const store = new InMemoryEventStore();
    const ids = await settled(store, 'dry', 2, 1_000);
    const report = await pruneExecutions(
      store,
      undefined,
      { endedBeforeMs: 2_000, dryRun: true },
      5_000,
    );
    expect(report.pruned.map((row) => row.executionId)).toEqual(ids);
    expect(report.receiptSequence).toBeNull();
    expect(await store.read(pruneReceiptLogId)).toEqual([]);
    expect((await store.findExecutions({ status: 'settled' })).length).toBe(2);
  });
});
