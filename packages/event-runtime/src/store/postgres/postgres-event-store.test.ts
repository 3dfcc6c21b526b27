import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import type { EventEnvelope, StoredEvent } from '../../envelope.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { eventHash } from '../../internal/hash-chain.js';
import { eventStoreConformance, freshId } from '../../testing/event-store-conformance.js';
import { listenerProcessId, listeningChannels } from '../../testing/store-hooks.js';
import { migrate } from './migrate.js';
import { latestSchemaVersion, postgresMigrations } from './migrations/migration-list.js';
import { bucketOf, channelName } from './notify-bucket.js';
import { classifyPgError, toLoomError } from './pg-errors.js';
import { PostgresEventStore } from './postgres-event-store.js';

const db = useThrowawaySchemas();
const { freshSchema } = db;

const url = pgTestUrl;
const unreachableUrl = 'postgres://root@127.0.0.1:1/test';

async function schemaExists(schema: string): Promise<boolean> {
  const result = await db.admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return result.rowCount === 1;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function env(executionId: string, sequence: number, payload: unknown = { n: sequence }) {
  return { executionId, sequence, type: 'test.event', payload } as EventEnvelope;
}

function range(executionId: string, from: number, count: number): EventEnvelope[] {
  return Array.from({ length: count }, (_, index) => env(executionId, from + index));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * readAll only returns rows below the oldest running writer of the whole cluster, so another
 * session's open transaction (a parallel run of this file, autovacuum) can hold a fresh commit
 * back for a moment: poll instead of asserting on the first read.
 */
async function readAllUntil(
  store: PostgresEventStore,
  afterPosition: number,
  done: (events: StoredEvent[]) => boolean,
): Promise<StoredEvent[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const events = await store.readAll({ afterPosition });
    if (done(events) || Date.now() > deadline) return events;
    await sleep(10);
  }
}

function eventsOf(executionId: string, events: StoredEvent[]): StoredEvent[] {
  return events.filter((event) => event.executionId === executionId);
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe('PostgresEventStore: schema and migrations', () => {
  it('migrate creates the schema once and is idempotent', async () => {
    const schema = freshSchema();
    const first = await migrate({ connectionString: url, schema });
    expect(first).toMatchObject({ schema, fromVersion: null, toVersion: latestSchemaVersion });
    expect(first.applied).toEqual(postgresMigrations.map((migration) => migration.name));
    const again = await migrate({ pool: db.admin, schema });
    expect(again).toMatchObject({ fromVersion: latestSchemaVersion, applied: [] });
    const version = await db.admin.query(`SELECT version FROM "${schema}".loom_schema_version`);
    expect(version.rows).toEqual([{ version: latestSchemaVersion }]);
  });

  it('two processes migrating one schema at once both succeed, and it is migrated once', async () => {
    const schema = freshSchema();
    const pools = [new pg.Pool({ connectionString: url }), new pg.Pool({ connectionString: url })];
    try {
      const results = await Promise.all(pools.map((pool) => migrate({ pool, schema })));
      expect(results.map((result) => result.applied.length).sort()).toEqual([
        0,
        postgresMigrations.length,
      ]);
      const version = await db.admin.query(`SELECT version FROM "${schema}".loom_schema_version`);
      expect(version.rows).toEqual([{ version: latestSchemaVersion }]);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('a read-only store never creates the schema and refuses every write', async () => {
    const schema = freshSchema();
    const store = await PostgresEventStore.open({ connectionString: url, schema, readOnly: true });
    try {
      const read = store.read('x');
      await expect(read).rejects.toMatchObject({ code: ErrorCode.SCHEMA_NOT_MIGRATED });
      await expect(read).rejects.toThrow(/run migrate\(\)/);
      expect(await codeOf(store.append([env('x', 0)]))).toBe(ErrorCode.STORE_READ_ONLY);
      expect(await codeOf(store.fences.advance('x'))).toBe(ErrorCode.STORE_READ_ONLY);
      expect(await codeOf(store.migrate())).toBe(ErrorCode.STORE_READ_ONLY);
      expect(await schemaExists(schema)).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('a writable store does not migrate on open; calls say to run migrate() until it is', async () => {
    const schema = freshSchema();
    const store = await PostgresEventStore.open({ connectionString: url, schema });
    try {
      expect(await codeOf(store.append([env('x', 0)]))).toBe(ErrorCode.SCHEMA_NOT_MIGRATED);
      expect(await schemaExists(schema)).toBe(false);
      await store.migrate();
      expect((await store.append([env('x', 0)]))[0]?.sequence).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('a schema written by a newer Loom is SCHEMA_TOO_NEW for open and migrate', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    await db.admin.query(`UPDATE "${schema}".loom_schema_version SET version = version + 1`);
    expect(await codeOf(PostgresEventStore.open({ pool: db.admin, schema }))).toBe(
      ErrorCode.SCHEMA_TOO_NEW,
    );
    expect(await codeOf(migrate({ pool: db.admin, schema }))).toBe(ErrorCode.SCHEMA_TOO_NEW);
  });

  it('refuses a schema name that is not a plain identifier', async () => {
    for (const schema of ['Loom', 'a-b', 'x"; DROP TABLE y; --', '', 'a'.repeat(41)]) {
      expect(await codeOf(PostgresEventStore.open({ pool: db.admin, schema }))).toBe(
        ErrorCode.INVALID_ARGUMENT,
      );
      expect(await codeOf(migrate({ pool: db.admin, schema }))).toBe(ErrorCode.INVALID_ARGUMENT);
    }
  });
});

describe('PostgresEventStore: driver errors', () => {
  it('an unreachable server is STORE_UNAVAILABLE', async () => {
    expect(await codeOf(PostgresEventStore.open({ connectionString: unreachableUrl }))).toBe(
      ErrorCode.STORE_UNAVAILABLE,
    );
    expect(await codeOf(migrate({ connectionString: unreachableUrl }))).toBe(
      ErrorCode.STORE_UNAVAILABLE,
    );
  });

  it('maps SQLSTATEs and socket errors to the kernel kinds', () => {
    const withCode = (code: string) => Object.assign(new Error(code), { code });
    expect(classifyPgError(withCode('23505'))).toBe('unique_violation');
    for (const code of ['55P03', '40001', '40P01'])
      expect(classifyPgError(withCode(code))).toBe('busy');
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '08006', '08001']) {
      expect(classifyPgError(withCode(code))).toBe('connection_lost');
    }
    expect(classifyPgError(new Error('Connection terminated unexpectedly'))).toBe(
      'connection_lost',
    );
    expect(classifyPgError(withCode('22P02'))).toBe('other');
    const context = { schema: 'loom', operation: 'append', latestVersion: 1 };
    expect(toLoomError(withCode('40P01'), context).code).toBe(ErrorCode.STORE_BUSY);
    expect(toLoomError(withCode('42P01'), context).code).toBe(ErrorCode.SCHEMA_NOT_MIGRATED);
    const other = toLoomError(withCode('XX000'), context);
    expect(other.code).toBe(ErrorCode.STORE_FAILURE);
    expect((other.cause as { code: string }).code).toBe('XX000');
  });
});

describe('PostgresEventStore: on a migrated schema', () => {
  let schema: string;
  let store: PostgresEventStore;

  beforeAll(async () => {
    schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    store = await PostgresEventStore.open({ connectionString: url, schema });
  });

  afterAll(async () => {
    await store.close();
  });

  it('smoke: append, read, readAll, verify and fences', async () => {
    const id = freshId('smoke');
    const stored = await store.append([env(id, 0, { z: -0, s: 'é\u0000' }), env(id, 1)]);
    expect(stored.map((event) => event.sequence)).toEqual([0, 1]);
    const read = await store.read(id);
    expect(read).toEqual(stored);
    const first = read[0] as StoredEvent;
    expect(Object.is((first.payload as { z: number }).z, -0)).toBe(true);
    const text = await db.admin.query(
      `SELECT payload FROM "${schema}".events WHERE execution_id = $1 AND sequence = 0`,
      [id],
    );
    expect(text.rows[0].payload).toBe('{"z":-0,"s":"é\\u0000"}');
    const mine = (events: StoredEvent[]) => events.filter((event) => event.executionId === id);
    expect(mine(await readAllUntil(store, 0, (events) => mine(events).length === 2))).toEqual(
      stored,
    );
    expect(await store.verify(id)).toMatchObject({ ok: true, events: 2 });
    expect(await store.fences.advance(id)).toBe(1);
    expect(await codeOf(store.append([env(id, 2)], { fenceEpoch: 0 }))).toBe(ErrorCode.FENCE_STALE);
    expect(await codeOf(store.readAll({ afterPosition: 987_654_321 }))).toBe(
      ErrorCode.INVALID_ARGUMENT,
    );
  });

  it('an append costs one round trip once the tail is known, two when it is not', async () => {
    const id = freshId('rt');
    const trips = async (call: () => Promise<unknown>, on = store) => {
      const before = on.stats.roundTrips;
      await call();
      return on.stats.roundTrips - before;
    };
    expect(await trips(() => store.append(range(id, 0, 3)))).toBe(1);
    expect(await trips(() => store.append(range(id, 3, 2)))).toBe(1);
    expect(
      await trips(() => store.append([env(id, 5)], { fenceEpoch: 0, status: 'running' })),
    ).toBe(1);
    const cold = await PostgresEventStore.open({ connectionString: url, schema });
    try {
      expect(await trips(() => cold.append([env(id, 6)]), cold)).toBe(2);
      expect(await trips(() => cold.append([env(id, 7)]), cold)).toBe(1);
      expect(await trips(() => store.read(id, { fromSequence: 7 }))).toBe(1);
      expect(await trips(() => store.append([env(id, 8)]))).toBe(1);
    } finally {
      await cold.close();
    }
    expect(await store.verify(id)).toMatchObject({ ok: true, events: 9 });
  });

  it('two stores on separate pools racing one sequence: exactly one wins', async () => {
    const peer = await PostgresEventStore.open({ connectionString: url, schema });
    try {
      for (let round = 0; round < 10; round++) {
        const id = freshId('race');
        const starts = await Promise.all([
          codeOf(store.append([env(id, 0)])),
          codeOf(peer.append([env(id, 0)])),
        ]);
        expect([...starts].sort()).toEqual([ErrorCode.EXECUTION_ALREADY_STARTED, 'resolved']);
        const outcomes = await Promise.all([
          store.append(range(id, 1, 2)).then(
            () => 'resolved',
            (error: LoomError) => error,
          ),
          peer.append(range(id, 1, 1)).then(
            () => 'resolved',
            (error: LoomError) => error,
          ),
        ]);
        expect(outcomes.filter((outcome) => outcome === 'resolved')).toHaveLength(1);
        const loser = outcomes.find((outcome) => outcome !== 'resolved') as LoomError;
        expect(loser.code).toBe(ErrorCode.SEQUENCE_CONFLICT);
        expect(loser.fields.actual).toBe(1);
        expect([2, 3]).toContain(loser.fields.expected);
        expect((await peer.verify(id)).ok).toBe(true);
      }
    } finally {
      await peer.close();
    }
  });

  it('one listener connection LISTENs only to the buckets its subscriptions need', async () => {
    const own = await PostgresEventStore.open({ connectionString: url, schema, notifyBuckets: 8 });
    try {
      const id = freshId('interest');
      const bucket = channelName(schema, bucketOf(id, 8));
      const one = own.subscribe({ executionId: id }, () => {});
      const same = own.subscribe({ executionId: id, fromSequence: 3 }, () => {});
      await waitFor(() => listenerProcessId(own) !== undefined, 'the listener');
      expect(await listeningChannels(own)).toEqual([bucket]);
      const global = own.subscribe({}, () => {});
      const all = Array.from({ length: 8 }, (_, index) => channelName(schema, index)).sort();
      expect(await listeningChannels(own)).toEqual(all);
      const pid = listenerProcessId(own);
      await global.close();
      expect(await listeningChannels(own)).toEqual([bucket]);
      await one.close();
      expect(await listeningChannels(own)).toEqual([bucket]);
      await same.close();
      expect(await listeningChannels(own)).toEqual([]);
      expect(listenerProcessId(own)).toBe(pid);
    } finally {
      await own.close();
    }
  });

  it('delivers another process’s appends through NOTIFY, and again after the listener is killed', async () => {
    const follower = await PostgresEventStore.open({
      connectionString: url,
      schema,
      pollIntervalMs: 0,
    });
    const writer = await PostgresEventStore.open({ connectionString: url, schema });
    const id = freshId('follow');
    const seen: number[] = [];
    const subscription = follower.subscribe({ executionId: id }, (events) => {
      for (const event of events) seen.push(event.sequence);
    });
    try {
      await waitFor(() => listenerProcessId(follower) !== undefined, 'the listener');
      await writer.append(range(id, 0, 2));
      await waitFor(() => seen.length === 2, 'notified events');
      const pid = listenerProcessId(follower);
      await db.admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await waitFor(
        () => ![undefined, pid].includes(listenerProcessId(follower)),
        'a new listener connection',
      );
      await writer.append(range(id, 2, 1));
      await waitFor(() => seen.length === 3, 'events after the reconnect');
      expect(seen).toEqual([0, 1, 2]);
    } finally {
      await subscription.close();
      await Promise.all([follower.close(), writer.close()]);
    }
  });

  it('readAll never lets a later commit overtake a transaction still open below it', async () => {
    const slow = freshId('slow');
    const fast = freshId('fast');
    const mine = (events: StoredEvent[]) =>
      events.filter((event) => event.executionId === slow || event.executionId === fast);
    const cursor = (await store.readAll()).at(-1)?.position ?? 0;
    const delivered: StoredEvent[] = [];
    const subscription = store.subscribe({ afterPosition: cursor }, (events) => {
      delivered.push(...mine(events));
    });
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      // The open transaction takes its xid first, then `fast` commits, then the open
      // transaction inserts: `slow` gets the higher position but the lower tx_id.
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      const pumpReads: Promise<StoredEvent[]>[] = [];
      const realReadAll = store.readAll.bind(store);
      const readAll = vi.spyOn(store, 'readAll').mockImplementation((options) => {
        const read = realReadAll(options);
        pumpReads.push(read);
        return read;
      });
      const [fastEvent] = await store.append([env(fast, 0)]);
      const hash = eventHash(null, slow, 0, 'test.event', 1, '{}');
      const inserted = await other.query(
        `INSERT INTO "${schema}".events (execution_id, sequence, type, payload, at, prev_hash, hash)
         VALUES ($1, 0, 'test.event', '{}', 1, NULL, $2) RETURNING position`,
        [slow, hash],
      );
      const slowPosition = Number(inserted.rows[0].position);
      expect(slowPosition).toBeGreaterThan(fastEvent?.position as number);
      // The append woke the subscription: wait for the read that wake-up made, not for a while.
      await waitFor(() => pumpReads.length > 0, "the subscription's read after the append");
      await Promise.allSettled(pumpReads);
      readAll.mockRestore();
      expect(mine(await store.readAll({ afterPosition: cursor }))).toEqual([]);
      expect(delivered).toEqual([]);
      await other.query('COMMIT');
      const after = mine(await readAllUntil(store, cursor, (events) => mine(events).length === 2));
      expect(after.map((event) => event.executionId)).toEqual([slow, fast]);
      expect(after.map((event) => event.position)).toEqual([slowPosition, fastEvent?.position]);
      const resumed = await readAllUntil(store, slowPosition, (events) => mine(events).length > 0);
      expect(mine(resumed).map((event) => event.executionId)).toEqual([fast]);
      await store.append([env(slow, 1)]);
      await waitFor(() => delivered.length === 3, 'delivery after the commit');
      expect(delivered.map((event) => `${event.executionId}:${event.sequence}`)).toEqual([
        `${slow}:0`,
        `${fast}:0`,
        `${slow}:1`,
      ]);
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
      await subscription.close();
    }
  });

  // A global subscription reads with readAll, which holds back every commit newer than the
  // oldest transaction still open anywhere on the server. If that transaction outlives every
  // wake-up the append caused, nothing but a poll would read again: with the poll off (listen,
  // pollIntervalMs 0) the events were never delivered (issue 33's remote-wake flake).
  const heldBackModes = [
    { mode: 'listen, pollIntervalMs 0', options: { pollIntervalMs: 0 }, end: 'COMMIT' },
    { mode: 'listen, pollIntervalMs 0', options: { pollIntervalMs: 0 }, end: 'ROLLBACK' },
    {
      mode: "'poll'",
      options: { notifications: 'poll', pollIntervalMs: 50 },
      end: 'COMMIT',
    },
  ] as const;
  for (const { mode, options, end } of heldBackModes)
    it(`a global subscription (${mode}) delivers events an open transaction held back once it ends (${end}), with no further append`, async () => {
      const id = freshId('held');
      const cursor = (await store.readAll()).at(-1)?.position ?? 0;
      const follower = await PostgresEventStore.open({ connectionString: url, schema, ...options });
      const delivered: StoredEvent[] = [];
      const reads: Promise<StoredEvent[]>[] = [];
      const realReadAll = follower.readAll.bind(follower);
      vi.spyOn(follower, 'readAll').mockImplementation((readOptions) => {
        const read = realReadAll(readOptions);
        reads.push(read);
        return read;
      });
      const subscription = follower.subscribe({ afterPosition: cursor }, (events) => {
        delivered.push(...events.filter((event) => event.executionId === id));
      });
      const other = new pg.Client({ connectionString: url });
      await other.connect();
      try {
        if (!('notifications' in options))
          await waitFor(() => listenerProcessId(follower) !== undefined, 'the listener');
        await waitFor(() => reads.length > 0, 'the catch-up read');
        await Promise.allSettled(reads);
        // Older than the appends below, and open across every wake-up they cause.
        await other.query('BEGIN');
        await other.query('SELECT pg_current_xact_id()');
        const readsBefore = reads.length;
        await store.append(range(id, 0, 3));
        // Two reads after the append, both while the transaction was open: the notification's,
        // then the wake-up 25 ms later (all the store ever did before: one late wake, then only
        // the poll; in poll mode, two ticks). Then the transaction ends, and nothing is appended.
        await waitFor(() => reads.length >= readsBefore + 2, 'two reads after the append');
        await Promise.allSettled(reads);
        expect(delivered).toEqual([]);
        expect(eventsOf(id, await follower.readAll({ afterPosition: cursor }))).toEqual([]);
        await other.query(end);
        await waitFor(() => delivered.length === 3, 'delivery once the transaction ended');
        expect(delivered.map((event) => event.sequence)).toEqual([0, 1, 2]);
      } finally {
        await other.query('ROLLBACK').catch(() => undefined);
        await other.end();
        await subscription.close();
        await follower.close();
      }
    });

  it('pins the bucket hash, which every process on a schema must agree on', () => {
    // FNV-1a of "a" is 0xe40c292c; of "" the offset basis 0x811c9dc5.
    expect([bucketOf('a', 16), bucketOf('', 16), bucketOf('order-1', 16)]).toEqual([12, 5, 13]);
    expect(bucketOf('exécution-Ω', 1024)).toBe(551);
  });
});

/**
 * The suite once per way of hearing other processes' writes: LISTEN/NOTIFY with a 200 ms safety
 * poll, and the poll mode (no LISTEN, no NOTIFY; ADR 0057), whose only wake-up is its 50 ms poll.
 */
const modes = [
  { name: 'postgres', options: { pollIntervalMs: 200 } },
  {
    name: "postgres, notifications: 'poll'",
    options: { notifications: 'poll', pollIntervalMs: 50 },
  },
] as const;

for (const mode of modes)
  eventStoreConformance(mode.name, async () => {
    // A migrated schema emptied after the test before it (or a new one): as fresh, without migrating it.
    const schema = await db.migratedSchema();
    const open = () => PostgresEventStore.open({ connectionString: url, schema, ...mode.options });
    const store = await open();
    const peers: PostgresEventStore[] = [];
    return {
      store,
      openPeer: async () => {
        const peer = await open();
        peers.push(peer);
        return peer;
      },
      countRows: async (executionId) => {
        const result = await db.admin.query(
          `SELECT count(*)::int AS n FROM "${schema}".events WHERE execution_id = $1`,
          [executionId],
        );
        return result.rows[0].n as number;
      },
      tamper: async (executionId, sequence, payloadText) => {
        await db.admin.query(
          `UPDATE "${schema}".events SET payload = $3 WHERE execution_id = $1 AND sequence = $2`,
          [executionId, sequence, payloadText],
        );
      },
      close: async () => {
        await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
        await db.releaseSchema(schema);
      },
    };
  });
