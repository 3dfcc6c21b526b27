import { describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import type { EventEnvelope } from '../../envelope.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { snapshotStoreConformance } from '../../testing/snapshot-store-conformance.js';
import { migrate } from './migrate.js';
import { eventLogMigration } from './migrations/0001-event-log.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { PostgresSnapshotStore } from './postgres-snapshot-store.js';

const db = useThrowawaySchemas();
const { freshSchema, dropSchema } = db;

const url = pgTestUrl;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

async function openMigrated() {
  const schema = freshSchema();
  await migrate({ pool: db.admin, schema });
  return { schema, snapshots: await PostgresSnapshotStore.open({ pool: db.admin, schema }) };
}

snapshotStoreConformance('postgres', async () => {
  const schema = await db.migratedSchema();
  // The store shares its event store's pool, as a runtime would; each peer has a pool of its own.
  const events = await PostgresEventStore.open({ connectionString: url, schema });
  const store = await PostgresSnapshotStore.open({ pool: events.connectionPool, schema });
  const peers: PostgresSnapshotStore[] = [];
  return {
    store,
    openPeer: async () => {
      const peer = await PostgresSnapshotStore.open({ connectionString: url, schema });
      peers.push(peer);
      return peer;
    },
    close: async () => {
      await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
      await events.close();
      await db.releaseSchema(schema);
    },
  };
});

function events3(executionId: string): EventEnvelope[] {
  return [0, 1, 2].map((sequence) => ({
    executionId,
    sequence,
    type: 'test.event',
    payload: { n: sequence },
  }));
}

describe('PostgresSnapshotStore.loadWithTail', () => {
  it('returns the snapshot and the events after it from the event store on its pool and schema', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const events = await PostgresEventStore.open({ connectionString: url, schema });
    const snapshots = await PostgresSnapshotStore.open({ pool: events.connectionPool, schema });
    try {
      const id = freshId('tail');
      await events.append(events3(id));
      const bare = await snapshots.loadWithTail(events, id, 100);
      expect(bare?.snapshot).toBeUndefined();
      expect(bare?.events.map((event) => event.sequence)).toEqual([0, 1, 2]);
      expect(bare?.events).toEqual(await events.read(id));
      const limited = await snapshots.loadWithTail(events, id, 2);
      expect(limited?.events.map((event) => event.sequence)).toEqual([0, 1]);
      await snapshots.save({ executionId: id, sequence: 1, state: { at: 1 }, at: 5 });
      const after = await snapshots.loadWithTail(events, id, 100);
      expect(after?.snapshot).toEqual({ executionId: id, sequence: 1, state: { at: 1 }, at: 5 });
      expect(after?.events).toEqual(await events.read(id, { fromSequence: 2 }));
      const none = await snapshots.loadWithTail(events, freshId('none'), 100);
      expect(none).toEqual({ snapshot: undefined, events: [] });
    } finally {
      await snapshots.close();
      await events.close();
      await dropSchema(schema);
    }
  });

  it('feeds the event store tail cache: the next append does not look up the previous hash', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const writer = await PostgresEventStore.open({ connectionString: url, schema });
    const queries: string[] = [];
    const events = await PostgresEventStore.open({
      connectionString: url,
      schema,
      onQuery: (name) => queries.push(name),
    });
    const snapshots = await PostgresSnapshotStore.open({ pool: events.connectionPool, schema });
    try {
      const id = freshId('tail-cache');
      await writer.append(events3(id)); // another process wrote it: `events` has no tail cached
      const loaded = await snapshots.loadWithTail(events, id, 100);
      expect(loaded?.events.length).toBe(3);
      queries.length = 0;
      await events.append([{ executionId: id, sequence: 3, type: 'test.event', payload: {} }]);
      expect(queries.some((name) => name.endsWith('hash-at'))).toBe(false);
      expect(queries.length).toBeGreaterThan(0);
    } finally {
      await snapshots.close();
      await events.close();
      await writer.close();
      await dropSchema(schema);
    }
  });

  it('declines (undefined) an event store on another pool or another schema', async () => {
    const schema = freshSchema();
    const other = freshSchema();
    await migrate({ pool: db.admin, schema });
    await migrate({ pool: db.admin, schema: other });
    const events = await PostgresEventStore.open({ connectionString: url, schema });
    const ownPool = await PostgresEventStore.open({ connectionString: url, schema });
    const otherSchema = await PostgresEventStore.open({
      pool: events.connectionPool,
      schema: other,
    });
    const snapshots = await PostgresSnapshotStore.open({ pool: events.connectionPool, schema });
    try {
      expect(await snapshots.loadWithTail(ownPool, 'x', 10)).toBeUndefined();
      expect(await snapshots.loadWithTail(otherSchema, 'x', 10)).toBeUndefined();
      expect(await snapshots.loadWithTail(events, 'x', 10)).toEqual({
        snapshot: undefined,
        events: [],
      });
    } finally {
      await snapshots.close();
      await otherSchema.close();
      await ownPool.close();
      await events.close();
      await dropSchema(schema);
      await dropSchema(other);
    }
  });
});

describe('PostgresSnapshotStore', () => {
  it('stores state as its exact JSON text and numbers as bigint', async () => {
    const { schema, snapshots } = await openMigrated();
    const at = 1_700_000_000_123;
    const sequence = 2 ** 40;
    try {
      await snapshots.save({ executionId: 'exact', sequence, state: { z: -0, s: 'ü🧵' }, at });
      const rows = await db.admin.query(
        `SELECT sequence::text, state, at::text, pg_typeof(sequence)::text AS type
         FROM "${schema}".snapshots`,
      );
      expect(rows.rows).toEqual([
        { sequence: String(sequence), state: '{"z":-0,"s":"ü🧵"}', at: String(at), type: 'bigint' },
      ]);
      const loaded = await snapshots.load('exact');
      expect(loaded).toEqual({ executionId: 'exact', sequence, state: { z: -0, s: 'ü🧵' }, at });
      expect(Object.is((loaded?.state as { z?: number } | undefined)?.z, -0)).toBe(true);
    } finally {
      await snapshots.close();
    }
  });

  it('a save at a lower sequence leaves the stored row untouched', async () => {
    const { schema, snapshots } = await openMigrated();
    const id = freshId('keep');
    const xmin = async () =>
      (
        await db.admin.query(
          `SELECT xmin::text FROM "${schema}".snapshots WHERE execution_id = $1`,
          [id],
        )
      ).rows[0]?.xmin as string;
    try {
      await snapshots.save({ executionId: id, sequence: 5, state: 'five', at: 1 });
      const before = await xmin();
      await snapshots.save({ executionId: id, sequence: 4, state: 'four', at: 2 });
      await snapshots.save({ executionId: id, sequence: 5, state: 'again', at: 3 });
      expect(await xmin()).toBe(before);
    } finally {
      await snapshots.close();
    }
  });

  it('a read-only store refuses saves with STORE_READ_ONLY and still loads', async () => {
    const { schema, snapshots } = await openMigrated();
    const snapshot = { executionId: 'ro', sequence: 1, state: { a: 1 }, at: 5 };
    await snapshots.save(snapshot);
    const reader = await PostgresSnapshotStore.open({
      connectionString: url,
      schema,
      readOnly: true,
    });
    try {
      expect(reader.readOnly).toBe(true);
      await expect(reader.save({ ...snapshot, sequence: 2 })).rejects.toMatchObject({
        code: ErrorCode.STORE_READ_ONLY,
      });
      expect(await reader.load('ro')).toEqual(snapshot);
    } finally {
      await reader.close();
      await snapshots.close();
    }
  });

  it('is SCHEMA_NOT_MIGRATED on an absent or version-1 schema until migrate(), without reopening', async () => {
    const absent = freshSchema();
    const early = await PostgresSnapshotStore.open({ connectionString: url, schema: absent });
    const older = freshSchema();
    await db.admin.query(`CREATE SCHEMA "${older}"`);
    for (const statement of eventLogMigration.statements(`"${older}"`)) {
      await db.admin.query(statement);
    }
    await db.admin.query(`INSERT INTO "${older}".loom_schema_version (version) VALUES (1)`);
    const late = await PostgresSnapshotStore.open({ pool: db.admin, schema: older });
    const snapshot = { executionId: 'x', sequence: 0, state: null, at: 0 };
    try {
      await expect(early.load('x')).rejects.toMatchObject({
        code: ErrorCode.SCHEMA_NOT_MIGRATED,
        fields: { expected: 2, actual: null },
      });
      await expect(late.save(snapshot)).rejects.toMatchObject({
        code: ErrorCode.SCHEMA_NOT_MIGRATED,
        fields: { expected: 2, actual: 1 },
      });
      await migrate({ pool: db.admin, schema: absent });
      await migrate({ pool: db.admin, schema: older });
      expect(await early.load('x')).toBeUndefined();
      await late.save(snapshot);
      expect(await late.load('x')).toEqual(snapshot);
    } finally {
      await early.close();
      await late.close();
    }
  });

  it('refuses a schema written by a newer Loom with SCHEMA_TOO_NEW at open', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    await db.admin.query(`UPDATE "${schema}".loom_schema_version SET version = version + 1`);
    expect(await codeOf(PostgresSnapshotStore.open({ pool: db.admin, schema }))).toBe(
      ErrorCode.SCHEMA_TOO_NEW,
    );
  });

  it('shares the event store pool: closing it leaves the pool open; ending the pool is STORE_CLOSED', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const events = await PostgresEventStore.open({ connectionString: url, schema });
    const first = await PostgresSnapshotStore.open({ pool: events.connectionPool, schema });
    const second = await PostgresSnapshotStore.open({ pool: events.connectionPool, schema });
    const snapshot = { executionId: 'x', sequence: 1, state: [1], at: 1 };
    await first.close();
    expect(await codeOf(first.load('x'))).toBe(ErrorCode.STORE_CLOSED);
    await second.save(snapshot);
    expect(await second.load('x')).toEqual(snapshot);
    await events.close();
    expect(await codeOf(second.load('x'))).toBe(ErrorCode.STORE_CLOSED);
    expect(await codeOf(second.save(snapshot))).toBe(ErrorCode.STORE_CLOSED);
    await second.close();
  });
});
