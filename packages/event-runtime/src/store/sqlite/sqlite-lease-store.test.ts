import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../errors.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { leaseStoreConformance } from '../../testing/lease-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { killTestProcesses, spawnTestProcess } from '../../testing/test-process.js';
import { SqliteEventStore } from './sqlite-event-store.js';
import { SqliteLeaseStore } from './sqlite-lease-store.js';
import { sqliteMigrations, sqliteSchemaVersion } from './sqlite-migrations.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-lease-test-'));
let fileCounter = 0;
const freshPath = () => join(directory, `leases-${++fileCounter}.db`);
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

leaseStoreConformance('sqlite', async () => {
  const path = freshPath();
  const events = SqliteEventStore.open({ path, migrate: true });
  const clock = new ManualClock();
  const store = new SqliteLeaseStore(events.database, { clock });
  const peers: SqliteEventStore[] = [];
  return {
    store,
    clock,
    // A second connection on the same file, as a second process would have.
    openPeer: async () => {
      const peer = SqliteEventStore.open({ path });
      peers.push(peer);
      return new SqliteLeaseStore(peer.database, { clock });
    },
    close: async () => {
      await store.close();
      await Promise.all(peers.map((peer) => peer.close()));
      await events.close();
    },
  };
});

/**
 * Commits in the WAL file since it was last truncated: a commit is the one frame of a transaction
 * whose header carries the database size after the commit (non-zero). Frames whose salts differ
 * from the header's are left over from before a reset and are not counted.
 */
function walCommits(path: string): number {
  const wal = readFileSync(`${path}-wal`);
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const salts = [wal.readUInt32BE(16), wal.readUInt32BE(20)];
  let commits = 0;
  for (let offset = 32; offset + 24 + pageSize <= wal.length; offset += 24 + pageSize) {
    if (wal.readUInt32BE(offset + 8) !== salts[0] || wal.readUInt32BE(offset + 12) !== salts[1]) {
      break;
    }
    if (wal.readUInt32BE(offset + 4) !== 0) commits += 1;
  }
  return commits;
}

function openMigrated(options: { busyTimeoutMs?: number } = {}) {
  const path = freshPath();
  const events = SqliteEventStore.open({ path, migrate: true, ...options });
  const clock = new ManualClock();
  return { path, events, clock, leases: new SqliteLeaseStore(events.database, { clock }) };
}

const child = join(import.meta.dirname, '../../../test/fixtures/sqlite-lease-child.ts');

async function acquireFromChild(
  path: string,
  owner: string,
  ids: readonly string[],
  raceAt: number,
): Promise<{ outcome: string; granted: string[] }> {
  const { stdout } = await spawnTestProcess(child, {
    args: [path, owner, ids.join(',')],
    env: { LOOM_RACE_AT: String(raceAt) },
  }).succeeded();
  return JSON.parse(stdout.trim());
}

describe('SqliteLeaseStore', () => {
  it('a batch of 1,000 ids is one transaction: one commit in the WAL per call', async () => {
    const { path, events, leases, clock } = openMigrated();
    // No automatic checkpoint may reset the WAL while commits are being counted.
    events.database.pragma('wal_autocheckpoint = 0');
    const commitsOf = async (work: () => Promise<unknown>): Promise<number> => {
      events.database.pragma('wal_checkpoint(TRUNCATE)');
      await work();
      return walCommits(path);
    };
    const batch = Array.from({ length: 1_000 }, (_, index) => `batch-${index}`);
    try {
      // The counter counts: three single-id calls are three commits.
      expect(
        await commitsOf(async () => {
          for (const id of ['solo-1', 'solo-2', 'solo-3']) {
            await leases.acquireMany('node-a', [id], 1_000);
          }
        }),
      ).toBe(3);
      expect(await commitsOf(() => leases.acquireMany('node-a', batch, 1_000))).toBe(1);
      // A renew that writes the expiry already stored changes no page and commits nothing.
      await clock.advance(10);
      expect(await commitsOf(() => leases.renewMany('node-a', batch, 1_000))).toBe(1);
      expect(await commitsOf(() => leases.releaseMany('node-a', batch))).toBe(1);
      expect(await commitsOf(() => leases.acquireMany('node-a', [], 1_000))).toBe(0);
    } finally {
      await leases.close();
      await events.close();
    }
  });

  it('a batch that fails on its last id writes none of them', async () => {
    const { events, leases } = openMigrated();
    events.database.exec(`
      CREATE TRIGGER refuse_poison BEFORE INSERT ON loom_leases WHEN NEW.execution_id = 'poison'
      BEGIN SELECT RAISE(ABORT, 'poisoned id'); END;`);
    const batch = [...Array.from({ length: 999 }, (_, index) => `good-${index}`), 'poison'];
    try {
      await expect(leases.acquireMany('node-a', batch, 1_000)).rejects.toMatchObject({
        code: ErrorCode.STORE_FAILURE,
        fields: { operation: 'acquireMany' },
      });
      const count = events.database.prepare('SELECT count(*) AS n FROM loom_leases').get();
      expect(count).toEqual({ n: 0 });
    } finally {
      await leases.close();
      await events.close();
    }
  });

  it('two processes racing over the same ids: each id granted exactly once', async () => {
    const { path, events, leases } = openMigrated();
    try {
      const ids = Array.from({ length: 100 }, (_, index) => `${freshId('proc')}-${index}`);
      const raceAt = Date.now() + 1_500;
      const [first, second] = await Promise.all([
        acquireFromChild(path, 'node-a', ids, raceAt),
        acquireFromChild(path, 'node-b', [...ids].reverse(), raceAt),
      ]);
      expect(first?.outcome).toBe('ok');
      expect(second?.outcome).toBe('ok');
      const all = [...(first?.granted ?? []), ...(second?.granted ?? [])];
      expect(all.sort()).toEqual([...ids].sort());
      for (const id of first?.granted ?? []) expect((await leases.get(id))?.owner).toBe('node-a');
      for (const id of second?.granted ?? []) expect((await leases.get(id))?.owner).toBe('node-b');
    } finally {
      await leases.close();
      await events.close();
    }
  });

  it('a read-only store refuses writes with STORE_READ_ONLY and still reads', async () => {
    const { path, events, leases, clock } = openMigrated();
    await leases.acquireMany('node-a', ['held'], 1_000);
    const refusing = new SqliteLeaseStore(events.database, { clock, readOnly: true });
    const readerEvents = SqliteEventStore.open({ path, readOnly: true });
    const reader = new SqliteLeaseStore(readerEvents.database, { clock });
    try {
      expect(reader.readOnly).toBe(true);
      for (const store of [refusing, reader]) {
        const refused = { code: ErrorCode.STORE_READ_ONLY };
        await expect(store.acquireMany('node-b', ['fresh'], 1_000)).rejects.toMatchObject(refused);
        await expect(store.acquireMany('node-b', [], 1_000)).rejects.toMatchObject(refused);
        await expect(store.renewMany('node-a', ['held'], 5_000)).rejects.toMatchObject(refused);
        await expect(store.releaseMany('node-a', ['held'])).rejects.toMatchObject(refused);
        expect(await store.get('held')).toEqual({
          executionId: 'held',
          owner: 'node-a',
          expiresAtMs: clock.now() + 1_000,
        });
        expect(await store.get('fresh')).toBeUndefined();
      }
    } finally {
      await reader.close();
      await readerEvents.close();
      await leases.close();
      await events.close();
    }
  });

  it('refuses an unmigrated or older schema with SCHEMA_NOT_MIGRATED until migrate()', async () => {
    const path = freshPath();
    const raw = new Database(path);
    raw.exec((sqliteMigrations[0] as { sql: string }).sql);
    raw.pragma('user_version = 1');
    raw.close();
    const events = SqliteEventStore.open({ path });
    const leases = new SqliteLeaseStore(events.database);
    try {
      const notMigrated = { code: ErrorCode.SCHEMA_NOT_MIGRATED, fields: { actual: 1 } };
      await expect(leases.acquireMany('node-a', ['x'], 1_000)).rejects.toMatchObject(notMigrated);
      await expect(leases.get('x')).rejects.toMatchObject(notMigrated);
      await events.migrate();
      expect(await leases.acquireMany('node-a', ['x'], 1_000)).toEqual(new Set(['x']));
    } finally {
      await leases.close();
      await events.close();
    }
  });

  it('refuses a schema newer than this code with SCHEMA_TOO_NEW', async () => {
    const raw = new Database(freshPath());
    raw.pragma(`user_version = ${sqliteSchemaVersion + 1}`);
    const leases = new SqliteLeaseStore(raw);
    await expect(leases.get('x')).rejects.toMatchObject({ code: ErrorCode.SCHEMA_TOO_NEW });
    raw.close();
  });

  it('a writer locked out past the busy timeout gets STORE_BUSY and writes nothing', async () => {
    const { path, events, leases } = openMigrated({ busyTimeoutMs: 50 });
    const locker = new Database(path);
    locker.exec('BEGIN IMMEDIATE');
    try {
      await expect(leases.acquireMany('node-a', ['busy'], 1_000)).rejects.toMatchObject({
        code: ErrorCode.STORE_BUSY,
      });
    } finally {
      locker.exec('ROLLBACK');
      locker.close();
    }
    expect(await leases.get('busy')).toBeUndefined();
    expect(await leases.acquireMany('node-a', ['busy'], 1_000)).toEqual(new Set(['busy']));
    await leases.close();
    await events.close();
  });

  it('closing the lease store leaves the shared handle open; a closed handle is STORE_CLOSED', async () => {
    const { events, leases } = openMigrated();
    const other = new SqliteLeaseStore(events.database);
    await leases.close();
    await expect(leases.get('x')).rejects.toMatchObject({ code: ErrorCode.STORE_CLOSED });
    expect(events.database.open).toBe(true);
    await events.append([{ executionId: 'x', sequence: 0, type: 't', payload: null }]);
    expect(await other.acquireMany('node-a', ['x'], 1_000)).toEqual(new Set(['x']));
    await events.close();
    await expect(other.get('x')).rejects.toMatchObject({ code: ErrorCode.STORE_CLOSED });
    await expect(other.releaseMany('node-a', ['x'])).rejects.toMatchObject({
      code: ErrorCode.STORE_CLOSED,
    });
  });
});
