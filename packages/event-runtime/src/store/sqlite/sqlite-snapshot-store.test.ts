import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../errors.js';
import { snapshotStoreConformance } from '../../testing/snapshot-store-conformance.js';
import { SqliteEventStore } from './sqlite-event-store.js';
import { SqliteSnapshotStore } from './sqlite-snapshot-store.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-snapshot-test-'));
let fileCounter = 0;
const freshPath = () => join(directory, `snapshots-${++fileCounter}.db`);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

snapshotStoreConformance('sqlite', async () => {
  const path = freshPath();
  const events = SqliteEventStore.open({ path, migrate: true });
  const store = new SqliteSnapshotStore(events.database);
  const peers: SqliteEventStore[] = [];
  return {
    store,
    // A second connection on the same file, as a second process would have.
    openPeer: async () => {
      const peer = SqliteEventStore.open({ path });
      peers.push(peer);
      return new SqliteSnapshotStore(peer.database);
    },
    close: async () => {
      await store.close();
      await Promise.all(peers.map((peer) => peer.close()));
      await events.close();
    },
  };
});

describe('SqliteSnapshotStore.loadWithTail', () => {
  it('returns the snapshot and the events after it from the event store on its handle', async () => {
    const events = SqliteEventStore.open({ path: freshPath(), migrate: true });
    const snapshots = new SqliteSnapshotStore(events.database);
    const id = 'tail';
    await events.append(
      [0, 1, 2].map((sequence) => ({
        executionId: id,
        sequence,
        type: 'test.event',
        payload: { n: sequence },
      })),
    );
    const bare = await snapshots.loadWithTail(events, id, 100);
    expect(bare?.snapshot).toBeUndefined();
    expect(bare?.events).toEqual(await events.read(id));
    expect((await snapshots.loadWithTail(events, id, 2))?.events.length).toBe(2);
    await snapshots.save({ executionId: id, sequence: 1, state: { at: 1 }, at: 5 });
    const after = await snapshots.loadWithTail(events, id, 100);
    expect(after?.snapshot).toEqual({ executionId: id, sequence: 1, state: { at: 1 }, at: 5 });
    expect(after?.events).toEqual(await events.read(id, { fromSequence: 2 }));
    await snapshots.close();
    await events.close();
  });

  it('declines (undefined) an event store on another handle, even of the same file', async () => {
    const path = freshPath();
    const events = SqliteEventStore.open({ path, migrate: true });
    const second = SqliteEventStore.open({ path });
    const snapshots = new SqliteSnapshotStore(events.database);
    expect(await snapshots.loadWithTail(second, 'x', 10)).toBeUndefined();
    expect(await snapshots.loadWithTail(events, 'x', 10)).toEqual({
      snapshot: undefined,
      events: [],
    });
    await snapshots.close();
    await second.close();
    await events.close();
  });
});

describe('SqliteSnapshotStore', () => {
  it('stores state as its exact JSON text', async () => {
    const events = SqliteEventStore.open({ path: freshPath(), migrate: true });
    const snapshots = new SqliteSnapshotStore(events.database);
    await snapshots.save({ executionId: 'exact', sequence: 3, state: { z: -0, s: 'ü🧵' }, at: 9 });
    expect(events.database.prepare('SELECT sequence, state, at FROM loom_snapshots').all()).toEqual(
      [{ sequence: 3, state: '{"z":-0,"s":"ü🧵"}', at: 9 }],
    );
    await snapshots.close();
    await events.close();
  });

  it('a read-only store refuses saves with STORE_READ_ONLY and still loads', async () => {
    const path = freshPath();
    const events = SqliteEventStore.open({ path, migrate: true });
    const writer = new SqliteSnapshotStore(events.database);
    const snapshot = { executionId: 'ro', sequence: 1, state: { a: 1 }, at: 5 };
    await writer.save(snapshot);
    const readerEvents = SqliteEventStore.open({ path, readOnly: true });
    const stores = [
      new SqliteSnapshotStore(events.database, { readOnly: true }),
      new SqliteSnapshotStore(readerEvents.database),
    ];
    for (const store of stores) {
      expect(store.readOnly).toBe(true);
      await expect(store.save({ ...snapshot, sequence: 2 })).rejects.toMatchObject({
        code: ErrorCode.STORE_READ_ONLY,
      });
      expect(await store.load('ro')).toEqual(snapshot);
    }
    await readerEvents.close();
    await events.close();
  });

  it('refuses an unmigrated database with SCHEMA_NOT_MIGRATED until migrate()', async () => {
    const events = SqliteEventStore.open({ path: freshPath() });
    const snapshots = new SqliteSnapshotStore(events.database);
    await expect(snapshots.load('x')).rejects.toMatchObject({
      code: ErrorCode.SCHEMA_NOT_MIGRATED,
    });
    await events.migrate();
    expect(await snapshots.load('x')).toBeUndefined();
    await events.close();
    await expect(snapshots.load('x')).rejects.toMatchObject({ code: ErrorCode.STORE_CLOSED });
  });
});
