import { describe, expect, it } from 'vitest';
import type { PruneOptions } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import { ForwardingEventStore } from '../forwarding-event-store.js';
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

/** A store whose `prune` fails after the receipt went in: a process that died between the two. */
class DiesBeforeRemoving extends ForwardingEventStore {
  override async prune(_options: PruneOptions): Promise<never> {
    throw new LoomError(ErrorCode.STORE_UNAVAILABLE, 'the connection was lost before the delete');
  }
}

describe('pruneExecutions', () => {
  it('a failure between the receipt and the removal leaves the executions there, listed by a receipt; the next prune lists them again and removes them', async () => {
    const store = new InMemoryEventStore();
    const ids = await settled(store, 'torn', 2, 1_000);
    const dying = new DiesBeforeRemoving(store);
    const torn = pruneExecutions(dying, undefined, { endedBeforeMs: 2_000 }, 5_000);
    await expect(torn).rejects.toMatchObject({ code: ErrorCode.STORE_UNAVAILABLE });
    expect(
      (await store.findExecutions({ status: 'settled' })).map((row) => row.executionId),
    ).toEqual(ids);
    for (const id of ids) expect(await store.verify(id)).toMatchObject({ ok: true, events: 2 });
    const again = await pruneExecutions(store, undefined, { endedBeforeMs: 2_000 }, 6_000);
    expect(again.pruned.map((row) => row.executionId)).toEqual(ids);
    expect(again.receiptSequence).toBe(1);
    const receipts = await store.read(pruneReceiptLogId);
    expect(
      receipts.map((event) =>
        (event.payload as unknown as PruneReceipt).executions.map((row) => row.executionId),
      ),
    ).toEqual([ids, ids]);
    expect(await store.findExecutions({ status: 'settled' })).toEqual([]);
  });

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
