import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { leaseStoreConformance } from '../../testing/lease-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { migrate } from './migrate.js';
import { eventLogMigration } from './migrations/0001-event-log.js';
import { pollModePeers } from './poll-mode-peers.test-support.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { PostgresLeaseStore } from './postgres-lease-store.js';

const db = useThrowawaySchemas();
const { freshSchema, dropSchema } = db;

const url = pgTestUrl;
const unreachableUrl = 'postgres://root@127.0.0.1:1/test';

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function ids(prefix: string, count: number): string[] {
  const base = freshId(prefix);
  return Array.from({ length: count }, (_, index) => `${base}-${String(index).padStart(4, '0')}`);
}

/**
 * A pool that counts every query its clients send. Every statement pg sends goes through
 * `Client#query` (the pool's `query` included), and one call is one round trip: Parse, Bind,
 * Execute and Sync of a named statement go out in one write and wait for one ReadyForQuery.
 */
function countingPool(): { pool: pg.Pool; queries: () => number } {
  const pool = new pg.Pool({ connectionString: url });
  let queries = 0;
  pool.on('connect', (client) => {
    const target = client as unknown as { query: (...args: unknown[]) => unknown };
    const query = target.query.bind(client);
    target.query = (...args) => {
      queries += 1;
      return query(...args);
    };
  });
  return { pool, queries: () => queries };
}

async function ownersOf(schema: string, executionIds: readonly string[]) {
  const result = await db.admin.query<{ execution_id: string; owner: string }>(
    `SELECT execution_id, owner FROM "${schema}".leases WHERE execution_id = ANY($1::text[])`,
    [executionIds],
  );
  return new Map(result.rows.map((row) => [row.execution_id, row.owner]));
}

/**
 * Runs `race` while another session holds the lease row of `blockedId` (inserting it uncommitted
 * if absent), waits until `waiters` sessions queue on locks of the lease table, then lets them
 * go. Forces the racing statements to overlap, however quickly each would run alone: without
 * one lock order they now deadlock (40P01, STORE_BUSY) instead of finishing unnoticed.
 */
async function racingPastABlocker<T>(
  schema: string,
  blockedId: string,
  waiters: number,
  race: () => Promise<T>,
): Promise<T> {
  const blocker = await db.admin.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(
      `INSERT INTO "${schema}".leases AS l (execution_id, owner, expires_at_ms)
       VALUES ($1, 'blocker', 0)
       ON CONFLICT (execution_id) DO UPDATE SET owner = l.owner`,
      [blockedId],
    );
    const racing = race();
    const deadline = Date.now() + 5_000;
    for (;;) {
      const waiting = await db.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND query LIKE $1`,
        [`%"${schema}".leases%`],
      );
      const waitingNow = waiting.rows[0]?.n ?? 0;
      if (waitingNow >= waiters) break;
      if (Date.now() > deadline) {
        // Without the overlap the race proves nothing: fail instead of carrying on.
        await blocker.query('ROLLBACK');
        await racing.catch(() => undefined);
        throw new Error(
          `only ${waitingNow} of ${waiters} sessions queued on the lease table's locks within 5 s: ` +
            'the racing statements never overlapped, so this test would prove nothing',
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await blocker.query('ROLLBACK');
    return await racing;
  } finally {
    await blocker.query('ROLLBACK').catch(() => undefined);
    blocker.release();
  }
}

async function openMigrated(clock = new ManualClock()) {
  const schema = freshSchema();
  await migrate({ pool: db.admin, schema });
  return {
    schema,
    clock,
    leases: await PostgresLeaseStore.open({ pool: db.admin, schema, clock }),
  };
}

leaseStoreConformance('postgres', async () => {
  // A migrated schema emptied after the test before it (or a new one): as fresh, without migrating it.
  const schema = await db.migratedSchema();
  const clock = new ManualClock();
  // The store shares its event store's pool, as a runtime would; each peer has a pool of its own.
  const events = await PostgresEventStore.open({ connectionString: url, schema });
  const store = await PostgresLeaseStore.open({ pool: events.connectionPool, schema, clock });
  const peers: PostgresLeaseStore[] = [];
  return {
    store,
    clock,
    openPeer: async () => {
      const peer = await PostgresLeaseStore.open({ connectionString: url, schema, clock });
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

// The same suite on the lease store of a whole backend opened in the poll mode (ADR 0057: no
// LISTEN, no NOTIFY), each peer a backend of its own, as two processes would have.
leaseStoreConformance("postgres, notifications: 'poll'", () =>
  pollModePeers(db, url, (backend) => backend.leases),
);

describe('PostgresLeaseStore', () => {
  it('a batch of 1,000 ids is one round trip per call; an empty batch is none', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const { pool, queries } = countingPool();
    const leases = await PostgresLeaseStore.open({ pool, schema, clock: new ManualClock() });
    const tripsOf = async (work: () => Promise<unknown>): Promise<number> => {
      const before = queries();
      await work();
      return queries() - before;
    };
    const batch = ids('batch', 1_000);
    try {
      // The counter counts: three single-id calls are three round trips.
      expect(
        await tripsOf(async () => {
          for (const id of ids('solo', 3)) await leases.acquireMany('node-a', [id], 1_000);
        }),
      ).toBe(3);
      expect(await tripsOf(() => leases.acquireMany('node-a', batch, 1_000))).toBe(1);
      expect((await ownersOf(schema, batch)).size).toBe(1_000);
      expect(await tripsOf(() => leases.renewMany('node-a', batch, 1_000))).toBe(1);
      expect(await tripsOf(() => leases.releaseMany('node-a', batch))).toBe(1);
      expect((await ownersOf(schema, batch)).size).toBe(0);
      expect(await tripsOf(() => leases.acquireMany('node-a', [], 1_000))).toBe(0);
      expect(await tripsOf(() => leases.renewMany('node-a', [], 1_000))).toBe(0);
      expect(await tripsOf(() => leases.releaseMany('node-a', []))).toBe(0);
    } finally {
      await leases.close();
      await pool.end();
    }
  });

  it('two pools racing acquires of 100 ids in opposite orders: each granted exactly once', async () => {
    const { schema, clock, leases } = await openMigrated();
    const stores = await Promise.all(
      ['node-a', 'node-b'].map(() =>
        PostgresLeaseStore.open({ connectionString: url, schema, clock }),
      ),
    );
    const [first, second] = stores as [PostgresLeaseStore, PostgresLeaseStore];
    try {
      for (let round = 0; round < 6; round++) {
        const batch = ids(`race-${round}`, 100);
        const race = () =>
          Promise.all([
            first.acquireMany('node-a', batch, 60_000),
            second.acquireMany('node-b', [...batch].reverse(), 60_000),
          ]);
        // Odd rounds race freely; even rounds are made to overlap in the middle of the batch.
        const [a, b] =
          round % 2 === 0
            ? await racingPastABlocker(schema, batch[50] as string, 2, race)
            : await race();
        expect(a.size + b.size).toBe(100);
        expect(new Set([...a, ...b])).toEqual(new Set(batch));
        const owners = await ownersOf(schema, batch);
        for (const id of a) expect(owners.get(id)).toBe('node-a');
        for (const id of b) expect(owners.get(id)).toBe('node-b');
      }
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      await leases.close();
    }
  });

  it('acquire, renew and release racing over overlapping ids never deadlock', async () => {
    const { clock, leases, schema } = await openMigrated();
    const peer = await PostgresLeaseStore.open({ connectionString: url, schema, clock });
    try {
      for (let round = 0; round < 5; round++) {
        const batch = ids(`tangle-${round}`, 200);
        await leases.acquireMany('node-a', batch, 1_000);
        await clock.advance(1_000); // every lease of node-a has expired: node-b may take any of them
        const released = batch.filter((_, index) => index % 3 === 0);
        const [taken, lost] = await racingPastABlocker(schema, batch[100] as string, 2, () =>
          Promise.all([
            peer.acquireMany('node-b', [...batch].reverse(), 60_000),
            leases.renewMany('node-a', [...batch].reverse(), 60_000),
            leases.releaseMany('node-a', [...released].reverse()),
          ]),
        );
        // A renewed id may be released right after and then taken; any other was live for node-a
        // from its renewal on, so node-b cannot have it.
        const kept = batch.filter((id) => !lost.includes(id) && !released.includes(id));
        expect(kept.filter((id) => taken.has(id))).toEqual([]);
        const owners = await ownersOf(schema, batch);
        for (const id of taken) expect(owners.get(id)).toBe('node-b');
        for (const id of kept) expect(owners.get(id)).toBe('node-a');
        for (const id of batch) {
          if (!taken.has(id)) expect([undefined, 'node-a']).toContain(owners.get(id));
        }
      }
    } finally {
      await peer.close();
      await leases.close();
    }
  });

  it('a batch that fails on its last id writes none of them', async () => {
    const { schema, leases } = await openMigrated();
    await db.admin.query(`
      CREATE FUNCTION "${schema}".refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.execution_id = 'zz-poison' THEN RAISE EXCEPTION 'poisoned id'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_poison BEFORE INSERT ON "${schema}".leases
        FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_poison();`);
    const batch = [...ids('good', 999), 'zz-poison'];
    try {
      await expect(leases.acquireMany('node-a', batch, 1_000)).rejects.toMatchObject({
        code: ErrorCode.STORE_FAILURE,
        fields: { operation: 'acquireMany', code: 'P0001' },
      });
      const count = await db.admin.query(`SELECT count(*)::int AS n FROM "${schema}".leases`);
      expect(count.rows).toEqual([{ n: 0 }]);
    } finally {
      await leases.close();
    }
  });

  it('an id Postgres text cannot hold (NUL) is INVALID_ENVELOPE and nothing is written', async () => {
    const { leases } = await openMigrated();
    const good = freshId('good');
    try {
      expect(await codeOf(leases.acquireMany('node-a', [good, 'nul\u0000id'], 1_000))).toBe(
        ErrorCode.INVALID_ENVELOPE,
      );
      expect(await leases.get(good)).toBeUndefined();
      expect(await codeOf(leases.get('nul\u0000id'))).toBe(ErrorCode.INVALID_ENVELOPE);
    } finally {
      await leases.close();
    }
  });

  it('a read-only store refuses writes with STORE_READ_ONLY and still reads', async () => {
    const { schema, clock, leases } = await openMigrated();
    await leases.acquireMany('node-a', ['held'], 1_000);
    const reader = await PostgresLeaseStore.open({
      connectionString: url,
      schema,
      clock,
      readOnly: true,
    });
    try {
      expect(reader.readOnly).toBe(true);
      const refused = { code: ErrorCode.STORE_READ_ONLY };
      await expect(reader.acquireMany('node-b', ['fresh'], 1_000)).rejects.toMatchObject(refused);
      await expect(reader.acquireMany('node-b', [], 1_000)).rejects.toMatchObject(refused);
      await expect(reader.renewMany('node-a', ['held'], 5_000)).rejects.toMatchObject(refused);
      await expect(reader.releaseMany('node-a', ['held'])).rejects.toMatchObject(refused);
      expect(await reader.get('held')).toEqual({
        executionId: 'held',
        owner: 'node-a',
        expiresAtMs: clock.now() + 1_000,
      });
      expect(await reader.get('fresh')).toBeUndefined();
    } finally {
      await reader.close();
      await leases.close();
    }
  });

  it('is SCHEMA_NOT_MIGRATED on an absent or version-1 schema until migrate(), without reopening', async () => {
    const absent = freshSchema();
    const early = await PostgresLeaseStore.open({ connectionString: url, schema: absent });
    const older = freshSchema();
    await db.admin.query(`CREATE SCHEMA "${older}"`);
    for (const statement of eventLogMigration.statements(`"${older}"`)) {
      await db.admin.query(statement);
    }
    await db.admin.query(`INSERT INTO "${older}".loom_schema_version (version) VALUES (1)`);
    const late = await PostgresLeaseStore.open({ pool: db.admin, schema: older });
    try {
      const notMigrated = (actual: number | null) => ({
        code: ErrorCode.SCHEMA_NOT_MIGRATED,
        fields: { expected: 2, actual },
      });
      await expect(early.acquireMany('node-a', ['x'], 1_000)).rejects.toMatchObject(
        notMigrated(null),
      );
      await expect(early.get('x')).rejects.toThrow(/run migrate\(\)/);
      await expect(late.renewMany('node-a', ['x'], 1_000)).rejects.toMatchObject(notMigrated(1));
      await expect(late.get('x')).rejects.toMatchObject(notMigrated(1));
      await migrate({ pool: db.admin, schema: absent });
      await migrate({ pool: db.admin, schema: older });
      expect(await early.acquireMany('node-a', ['x'], 1_000)).toEqual(new Set(['x']));
      expect(await late.acquireMany('node-a', ['x'], 1_000)).toEqual(new Set(['x']));
      await dropSchema(older);
      expect(await codeOf(late.get('x'))).toBe(ErrorCode.SCHEMA_NOT_MIGRATED);
    } finally {
      await early.close();
      await late.close();
    }
  });

  it('refuses a schema written by a newer Loom with SCHEMA_TOO_NEW at open', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    await db.admin.query(`UPDATE "${schema}".loom_schema_version SET version = version + 1`);
    expect(await codeOf(PostgresLeaseStore.open({ pool: db.admin, schema }))).toBe(
      ErrorCode.SCHEMA_TOO_NEW,
    );
  });

  it('refuses bad options with INVALID_ARGUMENT and an unreachable server with STORE_UNAVAILABLE', async () => {
    expect(await codeOf(PostgresLeaseStore.open({ pool: db.admin, schema: 'Bad-Name' }))).toBe(
      ErrorCode.INVALID_ARGUMENT,
    );
    expect(
      await codeOf(PostgresLeaseStore.open({ pool: db.admin, connectionString: url, schema: 'x' })),
    ).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(await codeOf(PostgresLeaseStore.open({ connectionString: unreachableUrl }))).toBe(
      ErrorCode.STORE_UNAVAILABLE,
    );
  });

  it('shares the event store pool: closing the lease store leaves it open; ending it is STORE_CLOSED', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const events = await PostgresEventStore.open({ connectionString: url, schema });
    const pool = events.connectionPool;
    const first = await PostgresLeaseStore.open({ pool, schema });
    const second = await PostgresLeaseStore.open({ pool, schema });
    await first.close();
    expect(await codeOf(first.get('x'))).toBe(ErrorCode.STORE_CLOSED);
    expect(pool.ending).toBe(false);
    await events.append([{ executionId: 'x', sequence: 0, type: 't', payload: null }]);
    expect(await second.acquireMany('node-a', ['x'], 1_000)).toEqual(new Set(['x']));
    await events.close();
    expect(await codeOf(second.get('x'))).toBe(ErrorCode.STORE_CLOSED);
    expect(await codeOf(second.releaseMany('node-a', ['x']))).toBe(ErrorCode.STORE_CLOSED);
    await second.close();
  });
});
