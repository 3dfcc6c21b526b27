import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode, type LoomError } from '../../errors.js';
import { liveStoreConformance } from '../../testing/live-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { SqliteEventStore } from './sqlite-event-store.js';
import { SqliteLiveStore } from './sqlite-live-store.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-live-test-'));
let fileCounter = 0;
const freshPath = () => join(directory, `live-${++fileCounter}.db`);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

liveStoreConformance('sqlite', async () => {
  const path = freshPath();
  const clock = new ManualClock(1_000);
  const events = SqliteEventStore.open({ path, migrate: true, clock });
  const store = new SqliteLiveStore(events.database, { clock });
  const peers: SqliteEventStore[] = [];
  return {
    store,
    clock,
    // A second connection on the same file, as a second process would have; it polls.
    openPeer: async () => {
      const peer = SqliteEventStore.open({ path });
      peers.push(peer);
      return new SqliteLiveStore(peer.database);
    },
    close: async () => {
      await store.close();
      await Promise.all(peers.map((peer) => peer.close()));
      await events.close();
    },
  };
});

describe('SqliteLiveStore', () => {
  it('writes without an fsync and leaves the connection at synchronous=FULL', async () => {
    const events = SqliteEventStore.open({ path: freshPath(), migrate: true });
    const live = new SqliteLiveStore(events.database);
    await live.write({ executionId: 'r', stream: 's', attempt: 'a', offset: 0, text: 'x' });
    expect(events.database.pragma('synchronous', { simple: true })).toBe(2);
    await live.close();
    await events.close();
  });

  it('refuses a database not migrated to the live table', async () => {
    const events = SqliteEventStore.open({ path: freshPath() });
    const live = new SqliteLiveStore(events.database);
    const code = await live
      .read('r', 's')
      .then(() => 'resolved')
      .catch((error: LoomError) => error.code);
    expect(code).toBe(ErrorCode.SCHEMA_NOT_MIGRATED);
    await live.close();
    await events.close();
  });
});
