import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode, type LoomError } from '../../errors.js';
import { eventStoreConformance, freshId } from '../../testing/event-store-conformance.js';
import { sqliteEventStoreHarness } from '../../testing/sqlite-harness.js';
import { killTestProcesses, spawnTestProcess } from '../../testing/test-process.js';
import { SqliteEventStore } from './sqlite-event-store.js';
import { sqliteSchemaVersion } from './sqlite-migrations.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-test-'));
let fileCounter = 0;
const freshPath = () => join(directory, `store-${++fileCounter}.db`);
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

eventStoreConformance('sqlite', async () => sqliteEventStoreHarness(freshPath()));

const child = join(import.meta.dirname, '../../../test/fixtures/sqlite-append-child.ts');

async function appendFromChild(
  path: string,
  executionId: string,
  sequence: number,
  count: number,
  label: string,
  raceAt: number,
): Promise<{ outcome: string; label: string }> {
  const { stdout } = await spawnTestProcess(child, {
    args: [path, executionId, String(sequence), String(count), label],
    env: { LOOM_RACE_AT: String(raceAt) },
  }).succeeded();
  return JSON.parse(stdout.trim());
}

describe('SqliteEventStore', () => {
  it('two processes racing one sequence on one file: exactly one wins', async () => {
    const path = freshPath();
    const store = SqliteEventStore.open({ path, migrate: true });
    try {
      for (let round = 0; round < 3; round++) {
        const id = freshId('proc-race');
        await store.append([{ executionId: id, sequence: 0, type: 'start', payload: null }]);
        const raceAt = Date.now() + 1_500;
        const outcomes = await Promise.all([
          appendFromChild(path, id, 1, 3, 'a', raceAt),
          appendFromChild(path, id, 1, 2, 'b', raceAt),
        ]);
        const winners = outcomes.filter((outcome) => outcome.outcome === 'ok');
        expect(winners).toHaveLength(1);
        expect(outcomes.map((outcome) => outcome.outcome)).toContain(ErrorCode.SEQUENCE_CONFLICT);
        const events = await store.read(id);
        expect(events).toHaveLength(winners[0]?.label === 'a' ? 4 : 3);
        expect((await store.verify(id)).ok).toBe(true);
      }
    } finally {
      await store.close();
    }
  });

  it("a subscriber hears another process's appends", async () => {
    const path = freshPath();
    const store = SqliteEventStore.open({ path, migrate: true, pollIntervalMs: 20 });
    const seen: string[] = [];
    const subscription = store.subscribe({}, (events) => {
      for (const event of events) seen.push(event.type);
    });
    try {
      const id = freshId('cross');
      await appendFromChild(path, id, 0, 2, 'x', 0);
      const deadline = Date.now() + 5_000;
      while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(seen).toEqual(['child.append', 'child.append']);
    } finally {
      await subscription.close();
      await store.close();
    }
  });

  it('prune keeps the execution holding the newest event until something follows it, so no position is handed out twice', async () => {
    const store = SqliteEventStore.open({ path: freshPath(), migrate: true });
    try {
      const last = freshId('prune-newest');
      await store.append([{ executionId: last, sequence: 0, type: 't', payload: 0, at: 1_000 }], {
        status: 'settled',
      });
      const [seen] = await store.readAll();
      expect(await store.prune({ endedBeforeMs: 2_000 })).toEqual([]);
      const next = freshId('prune-next');
      const [after] = await store.append([
        { executionId: next, sequence: 0, type: 't', payload: 1 },
      ]);
      expect(after?.position).toBeGreaterThan(seen?.position as number);
      expect((await store.prune({ endedBeforeMs: 2_000 })).map((row) => row.executionId)).toEqual([
        last,
      ]);
      // The cursor of a subscriber that read `seen` still finds what comes next.
      const [later] = await store.append([
        { executionId: freshId('prune-later'), sequence: 0, type: 't', payload: 2 },
      ]);
      const read = await store.readAll({ afterPosition: seen?.position as number });
      expect(read.map((event) => event.position)).toEqual([after?.position, later?.position]);
    } finally {
      await store.close();
    }
  });

  it('opens for writing with WAL and synchronous=FULL', () => {
    const store = SqliteEventStore.open({ path: freshPath(), migrate: true });
    expect(store.database.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.database.pragma('synchronous', { simple: true })).toBe(2);
    void store.close();
  });

  it('a read-only open never creates a file', () => {
    const path = freshPath();
    expect(() => SqliteEventStore.open({ path, readOnly: true })).toThrowError(
      expect.objectContaining({ code: ErrorCode.STORE_UNAVAILABLE }),
    );
    expect(existsSync(path)).toBe(false);
  });

  it('a read-only open never migrates and refuses writes', async () => {
    const path = freshPath();
    new Database(path).close();
    const store = SqliteEventStore.open({ path, readOnly: true });
    await expect(store.migrate()).rejects.toMatchObject({ code: ErrorCode.STORE_READ_ONLY });
    await expect(store.read('x')).rejects.toMatchObject({ code: ErrorCode.SCHEMA_NOT_MIGRATED });
    await store.close();
    const check = new Database(path);
    expect(check.pragma('user_version', { simple: true })).toBe(0);
    expect(
      check.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get(),
    ).toEqual({
      n: 0,
    });
    check.close();
  });

  it('a read-only store reads what a writer wrote and cannot append', async () => {
    const path = freshPath();
    const writer = SqliteEventStore.open({ path, migrate: true });
    await writer.append([{ executionId: 'ro', sequence: 0, type: 't', payload: { a: 1 } }]);
    const reader = SqliteEventStore.open({ path, readOnly: true });
    expect((await reader.read('ro'))[0]?.payload).toEqual({ a: 1 });
    await expect(
      reader.append([{ executionId: 'ro', sequence: 1, type: 't', payload: null }]),
    ).rejects.toMatchObject({ code: ErrorCode.STORE_READ_ONLY });
    await expect(reader.fences.advance('ro')).rejects.toMatchObject({
      code: ErrorCode.STORE_READ_ONLY,
    });
    await reader.close();
    await writer.close();
  });

  it('an unmigrated database refuses calls with SCHEMA_NOT_MIGRATED until migrate()', async () => {
    const store = SqliteEventStore.open({ path: freshPath() });
    const error = await store.read('x').catch((caught: LoomError) => caught);
    expect(error).toMatchObject({ code: ErrorCode.SCHEMA_NOT_MIGRATED });
    expect((error as LoomError).message).toMatch(/migrate\(\)/);
    await store.migrate();
    await store.migrate();
    expect(await store.read('x')).toEqual([]);
    await store.close();
  });

  it('a schema newer than this code is refused with SCHEMA_TOO_NEW', () => {
    const path = freshPath();
    const raw = new Database(path);
    raw.pragma(`user_version = ${sqliteSchemaVersion + 1}`);
    raw.close();
    expect(() => SqliteEventStore.open({ path })).toThrowError(
      expect.objectContaining({ code: ErrorCode.SCHEMA_TOO_NEW }),
    );
  });

  it('a writer locked out past the busy timeout gets STORE_BUSY and writes nothing', async () => {
    const path = freshPath();
    const store = SqliteEventStore.open({ path, migrate: true, busyTimeoutMs: 50 });
    const locker = new Database(path);
    locker.exec('BEGIN IMMEDIATE');
    try {
      await expect(
        store.append([{ executionId: 'busy', sequence: 0, type: 't', payload: null }]),
      ).rejects.toMatchObject({ code: ErrorCode.STORE_BUSY });
    } finally {
      locker.exec('ROLLBACK');
      locker.close();
    }
    expect(await store.read('busy')).toEqual([]);
    await store.append([{ executionId: 'busy', sequence: 0, type: 't', payload: null }]);
    expect(await store.read('busy')).toHaveLength(1);
    await store.close();
  });
});
