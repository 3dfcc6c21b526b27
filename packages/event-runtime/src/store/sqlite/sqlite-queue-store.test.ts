import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../errors.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { queueStoreConformance } from '../../testing/queue-store-conformance.js';
import { SqliteEventStore } from './sqlite-event-store.js';
import { sqliteMigrations } from './sqlite-migrations.js';
import { SqliteQueueStore } from './sqlite-queue-store.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-queue-test-'));
let fileCounter = 0;
const freshPath = () => join(directory, `queues-${++fileCounter}.db`);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

queueStoreConformance('sqlite', async () => {
  const path = freshPath();
  const events = SqliteEventStore.open({ path, migrate: true });
  const clock = new ManualClock();
  const store = new SqliteQueueStore(events.database, { clock });
  const peers: SqliteEventStore[] = [];
  return {
    store,
    clock,
    // A second connection on the same file, as a second process would have.
    openPeer: async () => {
      const peer = SqliteEventStore.open({ path });
      peers.push(peer);
      return new SqliteQueueStore(peer.database, { clock });
    },
    close: async () => {
      await store.close();
      await Promise.all(peers.map((peer) => peer.close()));
      await events.close();
    },
  };
});

describe('SqliteQueueStore', () => {
  it('refuses a schema before migration 4 with SCHEMA_NOT_MIGRATED until migrate()', async () => {
    const path = freshPath();
    const raw = new Database(path);
    for (const migration of sqliteMigrations.slice(0, 3)) raw.exec(migration.sql);
    raw.pragma('user_version = 3');
    raw.close();
    const events = SqliteEventStore.open({ path });
    const queues = new SqliteQueueStore(events.database);
    try {
      const input = { queue: 'q', flow: 'f', input: 1 };
      await expect(queues.enqueue(input)).rejects.toMatchObject({
        code: ErrorCode.SCHEMA_NOT_MIGRATED,
        fields: { actual: 3 },
      });
      await events.migrate();
      expect((await queues.enqueue(input)).duplicate).toBe(false);
    } finally {
      await queues.close();
      await events.close();
    }
  });

  it('a read-only store refuses writes with STORE_READ_ONLY and still reads', async () => {
    const path = freshPath();
    const events = SqliteEventStore.open({ path, migrate: true });
    const writer = new SqliteQueueStore(events.database);
    await writer.enqueue({ queue: 'q', itemId: 'a', flow: 'f', input: 1 });
    const reader = new SqliteQueueStore(events.database, { readOnly: true });
    try {
      const refused = { code: ErrorCode.STORE_READ_ONLY };
      await expect(reader.enqueue({ queue: 'q', flow: 'f', input: 1 })).rejects.toMatchObject(
        refused,
      );
      await expect(
        reader.claim('q', { owner: 'n', limit: 1, claimTtlMs: 10 }),
      ).rejects.toMatchObject(refused);
      await expect(reader.complete('q', ['a'])).rejects.toMatchObject(refused);
      expect((await reader.get('q', 'a'))?.status).toBe('pending');
    } finally {
      await writer.close();
      await events.close();
    }
  });
});
