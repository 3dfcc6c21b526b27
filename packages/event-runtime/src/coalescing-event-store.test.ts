import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../test/support/throwaway-schemas.js';
import { CoalescingEventStore } from './coalescing-event-store.js';
import type { EventEnvelope, StoredEvent } from './envelope.js';
import { ErrorCode, type LoomError } from './errors.js';
import type { EventStore } from './event-store.js';
import { batchOfOneHook } from './internal/test-hooks.js';
import { InMemoryEventStore } from './store/memory/in-memory-event-store.js';
import { migrate } from './store/postgres/migrate.js';
import { PostgresEventStore } from './store/postgres/postgres-event-store.js';
import { SqliteEventStore } from './store/sqlite/sqlite-event-store.js';
import type { EventStoreSection } from './testing/conformance-sections.js';
import { CountingEventStore } from './testing/counting-event-store.js';
import { eventStoreConformance, freshId } from './testing/event-store-conformance.js';
import { forwardingConformance } from './testing/forwarding-conformance.js';
import { ManualClock } from './testing/manual-clock.js';
import { sameProcessPeer } from './testing/same-process-peer.js';
import { sqliteEventStoreHarness } from './testing/sqlite-harness.js';
import { storedRows } from './testing/store-hooks.js';

const db = useThrowawaySchemas();
const directory = mkdtempSync(join(tmpdir(), 'loom-coalesce-test-'));
let fileCounter = 0;
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function env(executionId: string, sequence: number): EventEnvelope {
  return { executionId, sequence, type: `test.event.${sequence}`, payload: { n: sequence } };
}

async function refusal(promise: Promise<unknown>): Promise<LoomError> {
  try {
    await promise;
  } catch (error) {
    return error as LoomError;
  }
  throw new Error('expected the call to fail');
}

async function pgCountRows(schema: string, executionId: string): Promise<number> {
  const result = await db.admin.query(
    `SELECT count(*)::int AS n FROM "${schema}".events WHERE execution_id = $1`,
    [executionId],
  );
  return result.rows[0].n as number;
}

eventStoreConformance('coalescing over memory', async () => {
  const inner = new InMemoryEventStore();
  const store = new CoalescingEventStore(inner, { maxBatch: 8 });
  return {
    store,
    openPeer: async () => new CoalescingEventStore(sameProcessPeer(inner)),
    countRows: async (executionId) => storedRows(inner, executionId).length,
    tamper: async (executionId, sequence, payloadText) => {
      const row = storedRows(inner, executionId)[sequence];
      if (row !== undefined) row.payloadText = payloadText;
    },
    close: () => store.close(),
  };
});

// The store only changes append (queued, sent as the inner store's appendBatch; close drains the
// queue first): the rest is proven forwarded, and over SQLite and Postgres only the sections that
// append run again.
forwardingConformance('CoalescingEventStore', {
  wrap: (inner) => new CoalescingEventStore(inner),
  changes: ['append', 'appendBatch'],
});
const appendSections: EventStoreSection[] = [
  'append and read',
  'sequence rules',
  'fences',
  'round-trip fidelity',
  'bad input',
];

for (const plainPath of [true, false]) {
  eventStoreConformance(
    `coalescing over sqlite${plainPath ? '' : ', every append a batch write'}`,
    async () =>
      sqliteEventStoreHarness(join(directory, `store-${++fileCounter}.db`), {
        wrap: (inner) => {
          inner[batchOfOneHook](plainPath);
          return new CoalescingEventStore(inner);
        },
      }),
    { sections: appendSections },
  );
}

for (const plainPath of [true, false]) {
  eventStoreConformance(
    `coalescing over postgres${plainPath ? '' : ', every append a batch statement'}`,
    async () => {
      // A migrated schema emptied after the test before it (or a new one): as fresh, without migrating it.
      const schema = await db.migratedSchema();
      const open = async () => {
        const inner = await PostgresEventStore.open({
          connectionString: pgTestUrl,
          schema,
          pollIntervalMs: 200,
        });
        inner[batchOfOneHook](plainPath);
        return new CoalescingEventStore(inner, { maxBatch: 16 });
      };
      const store = await open();
      const peers: CoalescingEventStore[] = [];
      return {
        store,
        openPeer: async () => {
          const peer = await open();
          peers.push(peer);
          return peer;
        },
        countRows: (executionId) => pgCountRows(schema, executionId),
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
    },
    { sections: appendSections },
  );
}

describe('CoalescingEventStore over Postgres', () => {
  async function openPair(options: ConstructorParameters<typeof CoalescingEventStore>[1] = {}) {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const inner = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
    return { schema, inner, store: new CoalescingEventStore(inner, options) };
  }

  it('in one batch, a sequence conflict and a stale fence fail only their own executions', async () => {
    const { schema, inner, store } = await openPair({ maxBatch: 64 });
    try {
      const [conflicted, fenced, ...fine] = Array.from({ length: 6 }, () => freshId('mixed'));
      await store.append([env(conflicted as string, 0), env(conflicted as string, 1)]);
      await store.append([env(fenced as string, 0)]);
      await inner.fences.advance(fenced as string); // epoch 1: a writer holding 0 is stale
      const tripsBefore = inner.stats.roundTrips;
      const batchesBefore = store.stats.batches;
      const results = await Promise.allSettled([
        store.append([env(conflicted as string, 1)]),
        store.append([env(fenced as string, 1)], { fenceEpoch: 0 }),
        ...fine.map((id) => store.append([env(id, 0), env(id, 1), env(id, 2)])),
      ]);
      expect(store.stats.batches - batchesBefore).toBe(1);
      // The batch statement, plus the one hash lookup the cold sequence 0 of `conflicted` needs.
      expect(inner.stats.roundTrips - tripsBefore).toBeLessThanOrEqual(2);
      const [first, second, ...rest] = results;
      const conflict = (first as PromiseRejectedResult).reason as LoomError;
      expect(conflict.code).toBe(ErrorCode.SEQUENCE_CONFLICT);
      expect(conflict.fields).toMatchObject({ executionId: conflicted, expected: 2, actual: 1 });
      const stale = (second as PromiseRejectedResult).reason as LoomError;
      expect(stale.code).toBe(ErrorCode.FENCE_STALE);
      expect(stale.fields.executionId).toBe(fenced);
      for (const result of rest) expect(result.status).toBe('fulfilled');
      for (const id of fine) {
        expect(await pgCountRows(schema, id)).toBe(3);
        expect((await store.verify(id)).ok).toBe(true);
      }
      expect(await pgCountRows(schema, conflicted as string)).toBe(2);
      expect(await pgCountRows(schema, fenced as string)).toBe(1);
      const stored = (rest[0] as PromiseFulfilledResult<StoredEvent[]>).value;
      expect(stored.map((event) => event.sequence)).toEqual([0, 1, 2]);
      expect(await store.read(fine[0] as string)).toEqual(stored);
    } finally {
      await store.close();
    }
  });

  it('a second sequence 0 in a batch is EXECUTION_ALREADY_STARTED, the rest commit', async () => {
    const { schema, store } = await openPair();
    try {
      const started = freshId('started');
      const fresh = freshId('fresh');
      await store.append([env(started, 0)]);
      const [again, other] = await Promise.allSettled([
        store.append([env(started, 0)]),
        store.append([env(fresh, 0)]),
      ]);
      expect(((again as PromiseRejectedResult).reason as LoomError).code).toBe(
        ErrorCode.EXECUTION_ALREADY_STARTED,
      );
      expect(other?.status).toBe('fulfilled');
      expect(await pgCountRows(schema, fresh)).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('N concurrent appends cost at most ceil(N / maxBatch) + 1 statements (counted)', async () => {
    const { schema, inner, store } = await openPair({ maxBatch: 16 });
    try {
      const ids = Array.from({ length: 50 }, () => freshId('trips'));
      const bound = Math.ceil(ids.length / 16) + 1;
      let trips = inner.stats.roundTrips;
      await Promise.all(ids.map((id) => store.append([env(id, 0)])));
      expect(inner.stats.roundTrips - trips).toBeLessThanOrEqual(bound);
      // Warm tail cache: the next sequences need no hash lookup either.
      trips = inner.stats.roundTrips;
      await Promise.all(ids.map((id) => store.append([env(id, 1)])));
      expect(inner.stats.roundTrips - trips).toBeLessThanOrEqual(bound);
      expect(store.stats.largestBatch).toBe(16);
      for (const id of ids) expect(await pgCountRows(schema, id)).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('a cold tail cache costs one lookup for the whole batch', async () => {
    const { schema, inner, store } = await openPair({ maxBatch: 64 });
    const other = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
    try {
      const ids = Array.from({ length: 20 }, () => freshId('cold'));
      await Promise.all(ids.map((id) => other.append([env(id, 0)])));
      const trips = inner.stats.roundTrips;
      await Promise.all(ids.map((id) => store.append([env(id, 1)])));
      expect(inner.stats.roundTrips - trips).toBe(2);
      for (const id of ids) expect((await store.verify(id)).ok).toBe(true);
    } finally {
      await other.close();
      await store.close();
    }
  });

  it('appends of one execution issued together commit in order, one batch each', async () => {
    const { store } = await openPair();
    try {
      const id = freshId('ordered');
      const stored = await Promise.all(
        [0, 1, 2, 3].map((sequence) => store.append([env(id, sequence)])),
      );
      expect(stored.map((events) => events[0]?.sequence)).toEqual([0, 1, 2, 3]);
      expect((await store.verify(id)).ok).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('a writer racing inside the batch fails only its own execution (fallback after 23505)', async () => {
    const { schema, inner, store } = await openPair();
    const racer = new pg.Client({ connectionString: pgTestUrl });
    await racer.connect();
    try {
      const raced = freshId('raced');
      const bystander = freshId('bystander');
      const [zero] = await store.append([env(raced, 0)]);
      await store.append([env(bystander, 0)]);
      // Another writer holds sequence 1 of `raced`, not committed yet: the batch's probe cannot
      // see it, so its insert waits on the row lock and then hits the unique key.
      await racer.query('BEGIN');
      await racer.query(
        `INSERT INTO "${schema}".events (execution_id, sequence, type, payload, at, prev_hash, hash)
         VALUES ($1, 1, 'racer', 'null', 0, $2, $3)`,
        [raced, zero?.hash, 'f'.repeat(64)],
      );
      const both = Promise.allSettled([
        store.append([env(raced, 1)]),
        store.append([env(bystander, 1)]),
      ]);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const waiting = await db.admin.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND query LIKE 'WITH batch AS%'`,
        );
        if (waiting.rows[0].n > 0) break;
        if (Date.now() > deadline) throw new Error('the batch never waited on the racer');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await racer.query('COMMIT');
      const [lost, won] = await both;
      expect(((lost as PromiseRejectedResult).reason as LoomError).code).toBe(
        ErrorCode.SEQUENCE_CONFLICT,
      );
      expect(won?.status).toBe('fulfilled');
      expect(await pgCountRows(schema, bystander)).toBe(2);
      expect((await inner.read(raced))[1]?.type).toBe('racer');
    } finally {
      await racer.end();
      await store.close();
    }
  });

  it('close commits what is queued, then refuses appends with STORE_CLOSED', async () => {
    const { schema, store } = await openPair({ maxWaitMs: 1_000 });
    const ids = Array.from({ length: 10 }, () => freshId('closing'));
    const pending = ids.map((id) => store.append([env(id, 0)]));
    await store.close();
    const results = await Promise.allSettled(pending);
    expect(results.every((result) => result.status === 'fulfilled')).toBe(true);
    for (const id of ids) expect(await pgCountRows(schema, id)).toBe(1);
    expect((await refusal(store.append([env(freshId('late'), 0)]))).code).toBe(
      ErrorCode.STORE_CLOSED,
    );
  });

  it('maxWaitMs holds the first append until the batch is full', async () => {
    const { store } = await openPair({ maxBatch: 4, maxWaitMs: 1_000 });
    try {
      await Promise.all(
        Array.from({ length: 8 }, () => freshId('full')).map((id) => store.append([env(id, 0)])),
      );
      expect(store.stats).toMatchObject({ appends: 8, batches: 2, largestBatch: 4 });
    } finally {
      await store.close();
    }
  });

  it('options out of range are INVALID_ARGUMENT', async () => {
    const inner = new InMemoryEventStore();
    for (const options of [
      { maxBatch: 0 },
      { maxBatch: 1.5 },
      { maxWaitMs: -1 },
      { maxInFlight: 99 },
    ]) {
      const error = await refusal(
        Promise.resolve().then(() => new CoalescingEventStore(inner, options)),
      );
      expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    }
  });
});

describe('CoalescingEventStore over SQLite (one transaction per batch)', () => {
  function openSqlite() {
    const path = join(directory, `store-${++fileCounter}.db`);
    const inner = SqliteEventStore.open({ path, migrate: true });
    const side = new Database(path, { readonly: true });
    const rows = (executionId: string) =>
      (
        side
          .prepare('SELECT count(*) AS n FROM loom_events WHERE execution_id = ?')
          .get(executionId) as { n: number }
      ).n;
    return { inner, side, rows };
  }

  it('in one batch, a conflict and a stale fence fail only their own executions', async () => {
    const { inner, side, rows } = openSqlite();
    const store = new CoalescingEventStore(inner, { maxBatch: 64 });
    try {
      const [conflicted, fenced, ...fine] = Array.from({ length: 6 }, () => freshId('sq-mixed'));
      await store.append([env(conflicted as string, 0), env(conflicted as string, 1)]);
      await store.append([env(fenced as string, 0)]);
      await inner.fences.advance(fenced as string);
      const batchesBefore = store.stats.batches;
      const results = await Promise.allSettled([
        store.append([env(conflicted as string, 1)]),
        store.append([env(fenced as string, 1)], { fenceEpoch: 0 }),
        ...fine.map((id) => store.append([env(id, 0), env(id, 1)])),
      ]);
      expect(store.stats.batches - batchesBefore).toBe(1);
      const [first, second, ...rest] = results;
      expect(((first as PromiseRejectedResult).reason as LoomError).fields).toMatchObject({
        executionId: conflicted,
        expected: 2,
        actual: 1,
      });
      expect(((second as PromiseRejectedResult).reason as LoomError).code).toBe(
        ErrorCode.FENCE_STALE,
      );
      for (const result of rest) expect(result.status).toBe('fulfilled');
      for (const id of fine) expect(rows(id)).toBe(2);
      expect(rows(conflicted as string)).toBe(2);
      expect(rows(fenced as string)).toBe(1);
    } finally {
      await store.close();
      side.close();
    }
  });

  it('N concurrent appends commit in ceil(N / maxBatch) transactions', async () => {
    const { inner, side, rows } = openSqlite();
    const store = new CoalescingEventStore(inner, { maxBatch: 16 });
    try {
      const ids = Array.from({ length: 40 }, () => freshId('sq-trips'));
      await Promise.all(ids.map((id) => store.append([env(id, 0)])));
      expect(store.stats.batches).toBe(3);
      for (const id of ids) expect(rows(id)).toBe(1);
    } finally {
      await store.close();
      side.close();
    }
  });
});

describe('appendBatch', () => {
  it('refuses a repeated execution with INVALID_ARGUMENT and commits the rest (Postgres, SQLite)', async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const postgres = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
    const sqlite = SqliteEventStore.open({
      path: join(directory, `store-${++fileCounter}.db`),
      migrate: true,
    });
    try {
      for (const store of [postgres, sqlite]) {
        const id = freshId('twice');
        const other = freshId('once');
        const outcomes = await store.appendBatch([
          { envelopes: [env(id, 0)] },
          { envelopes: [env(id, 1)] },
          { envelopes: [env(other, 0)] },
          { envelopes: [] },
        ]);
        expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false, true, false]);
        const refused = outcomes[1] as { ok: false; error: LoomError };
        expect(refused.error.code).toBe(ErrorCode.INVALID_ARGUMENT);
        expect((outcomes[3] as { ok: false; error: LoomError }).error.code).toBe(
          ErrorCode.INVALID_ENVELOPE,
        );
        expect((await store.read(id)).length).toBe(1);
        expect((await store.read(other)).length).toBe(1);
      }
    } finally {
      await postgres.close();
      await sqlite.close();
    }
  });
});

describe('CoalescingEventStore batching (memory, manual clock)', () => {
  /** A store whose appends wait until `open()` is called: a batch held in flight. */
  class GatedStore extends CountingEventStore {
    constructor(inner: EventStore) {
      // Every write through the gated `append` (none through the inner store's `appendBatch`).
      super(inner, { appendBatch: false });
    }
    private release: () => void = () => {};
    private gate = new Promise<void>((resolve) => {
      this.release = resolve;
    });
    open(): void {
      this.release();
    }
    override async append(...args: Parameters<CountingEventStore['append']>) {
      await this.gate;
      return super.append(...args);
    }
  }

  async function settledWithin<T>(promise: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not settle within 5 s`)), 5_000);
    });
    try {
      return await Promise.race([promise, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  it('maxWaitMs delays only an idle store: appends queued behind a batch go when it returns', async () => {
    const clock = new ManualClock();
    const inner = new GatedStore(new InMemoryEventStore({ clock }));
    const store = new CoalescingEventStore(inner, { maxWaitMs: 1_000, clock });
    try {
      const first = store.append([env('a', 0)]);
      await clock.advance(1_000); // the idle wait is over: the first batch goes, and is held
      expect(store.stats.batches).toBe(1);
      const queued = [store.append([env('b', 0)]), store.append([env('c', 0)])];
      inner.open();
      await settledWithin(first, 'the first batch');
      // No clock advance: the appends that waited behind the batch go as soon as it returned.
      await settledWithin(Promise.all(queued), 'the appends queued behind it');
      expect(store.stats).toMatchObject({ appends: 3, batches: 2, largestBatch: 2 });
    } finally {
      await store.close();
    }
  });

  it('close sends appends still waiting out maxWaitMs, without the clock moving', async () => {
    const clock = new ManualClock();
    const inner = new InMemoryEventStore({ clock });
    const store = new CoalescingEventStore(inner, { maxWaitMs: 1_000, clock });
    const pending = store.append([env('waiting', 0)]);
    await store.close();
    expect((await settledWithin(pending, 'the waiting append'))[0]?.sequence).toBe(0);
    expect(storedRows(inner, 'waiting')).toHaveLength(1);
  });
});
