import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import type { EventEnvelope } from '../../envelope.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { eventHash } from '../../internal/hash-chain.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { claimDueStatement } from './claim-due-statement.js';
import { migrate } from './migrate.js';
import { latestSchemaVersion, postgresMigrations } from './migrations/migration-list.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { quoteIdent } from './schema-name.js';

const db = useThrowawaySchemas();
const { freshSchema } = db;

const url = pgTestUrl;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function env(executionId: string, sequence: number): EventEnvelope {
  return { executionId, sequence, type: 'test.event', payload: { n: sequence } };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves once `sessions` other sessions (1 unless told) wait for a lock held by the session `pid`. */
async function untilBlockedBy(pid: number, sessions = 1): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    // Directly, or behind a session that is (a second waiter queues on the first one's tuple lock).
    const result = await db.admin.query(
      `WITH first AS (
         SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)))
       SELECT count(*)::int AS n FROM pg_stat_activity a
       WHERE $1::int = ANY (pg_blocking_pids(a.pid))
          OR EXISTS (SELECT 1 FROM first f WHERE f.pid = ANY (pg_blocking_pids(a.pid)))`,
      [pid],
    );
    if (result.rows[0].n >= sessions) return;
    if (Date.now() > deadline) throw new Error(`nobody queued behind session ${pid}`);
    await sleep(5);
  }
}

/** The execution index row of `executionId`, as stored. */
async function indexRow(
  schema: string,
  executionId: string,
): Promise<{ status: string; wakeAtMs: number | null }> {
  const result = await db.admin.query(
    `SELECT status, wake_at_ms FROM ${quoteIdent(schema)}.executions WHERE execution_id = $1`,
    [executionId],
  );
  const row = result.rows[0];
  return { status: row.status, wakeAtMs: row.wake_at_ms === null ? null : Number(row.wake_at_ms) };
}

/** Round trips `call` cost on `store`. */
async function trips(store: PostgresEventStore, call: () => Promise<unknown>): Promise<number> {
  const before = store.stats.roundTrips;
  await call();
  return store.stats.roundTrips - before;
}

describe('PostgresEventStore: signals', () => {
  let schema: string;
  let store: PostgresEventStore;
  let peer: PostgresEventStore;
  const clock = new ManualClock();

  beforeAll(async () => {
    schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    // Two stores, each with its own pool: two nodes of one deployment.
    store = await PostgresEventStore.open({ connectionString: url, schema, clock });
    peer = await PostgresEventStore.open({ connectionString: url, schema, clock });
  });

  afterAll(async () => {
    await Promise.all([store.close(), peer.close()]);
  });

  it('20 concurrent sends to one execution from two pools get ids 1..20, without an error', async () => {
    const id = freshId('burst');
    await store.append([env(id, 0)], { status: 'suspended', wakeAtMs: null });
    const tripsBefore = store.stats.roundTrips + peer.stats.roundTrips;
    const sent = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        (index % 2 === 0 ? store : peer).sendSignal({ executionId: id, name: 'n', payload: index }),
      ),
    );
    expect(sent.every((result) => !result.duplicate)).toBe(true);
    // A sender loses an attempt only to a signal that committed during it, so the k-th to land
    // sent at most k statements: retries stay bounded by 1 + 2 + … + 20.
    const statements = store.stats.roundTrips + peer.stats.roundTrips - tripsBefore;
    expect(statements).toBeLessThanOrEqual((20 * 21) / 2);
    const signalIds = sent.map((result) => result.signalId).sort((a, b) => a - b);
    expect(signalIds).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
    const inbox = await store.readSignals(id);
    expect(inbox.map((signal) => signal.signalId)).toEqual(signalIds);
    expect(inbox.map((signal) => signal.payload).sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: 20 }, (_, index) => index),
    );
    expect(await indexRow(schema, id)).toEqual({ status: 'suspended', wakeAtMs: clock.now() });
  });

  it('one idempotency key sent 10 times at once from two pools is stored once', async () => {
    const id = freshId('same-key');
    await store.append([env(id, 0)], { status: 'running' });
    const sent = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        (index % 2 === 0 ? store : peer).sendSignal({
          executionId: id,
          name: 'pay',
          payload: index,
          idempotencyKey: 'charge-1',
        }),
      ),
    );
    expect(sent.filter((result) => !result.duplicate)).toHaveLength(1);
    expect(new Set(sent.map((result) => result.signalId))).toEqual(new Set([1]));
    expect(await store.readSignals(id)).toHaveLength(1);
  });

  it('sendSignal, a duplicate, readSignals and claimDue are one round trip each', async () => {
    const id = freshId('trips');
    await store.append([env(id, 0)], { status: 'suspended', wakeAtMs: null });
    const send = () =>
      store.sendSignal({ executionId: id, name: 'go', payload: 1, idempotencyKey: 'k' });
    expect(await trips(store, send)).toBe(1);
    expect(await trips(store, send)).toBe(1);
    expect(await trips(store, () => store.readSignals(id))).toBe(1);
    let claimed: string[] = [];
    expect(await trips(store, async () => (claimed = await store.claimDue(clock.now(), 100)))).toBe(
      1,
    );
    expect(claimed).toContain(id);
  });

  it('a signal queued behind an in-flight suspend wakes it; behind a settle it is refused', async () => {
    const suspending = freshId('queued-suspend');
    const settling = freshId('queued-settle');
    await store.append([env(suspending, 0)], { status: 'running' });
    await store.append([env(settling, 0)], { status: 'running' });
    const x = `${quoteIdent(schema)}.executions`;
    for (const [id, status] of [
      [suspending, 'suspended'],
      [settling, 'settled'],
    ] as const) {
      // Stands in for an append whose guard changes the status: it holds the index row until it
      // commits, and the signal's statement started while the row still said 'running'.
      const writer = await db.admin.connect();
      try {
        await writer.query('BEGIN');
        await writer.query(
          `UPDATE ${x} SET status = $2, wake_at_ms = NULL WHERE execution_id = $1`,
          [id, status],
        );
        const pid = (await writer.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
        const sending = codeOf(store.sendSignal({ executionId: id, name: 'go', payload: null }));
        await untilBlockedBy(pid);
        await writer.query('COMMIT');
        expect(await sending).toBe(status === 'settled' ? ErrorCode.EXECUTION_SETTLED : 'resolved');
      } finally {
        writer.release();
      }
    }
    expect(await indexRow(schema, suspending)).toEqual({
      status: 'suspended',
      wakeAtMs: clock.now(),
    });
    expect(await store.readSignals(settling)).toEqual([]);
  });

  it('a guarded suspension whose snapshot predates a signal committed before its upsert is still due (ADR 0033)', async () => {
    const id = freshId('guard-snapshot');
    await store.append([env(id, 0)], { status: 'running' });
    const x = `${quoteIdent(schema)}.executions`;
    const holder = await db.admin.connect();
    try {
      // Holds the index row, so both statements below queue on it: the signal first, then the
      // suspension, whose statement (and snapshot) starts before the signal commits.
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${x} WHERE execution_id = $1 FOR NO KEY UPDATE`, [id]);
      const pid = (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      const sending = peer.sendSignal({ executionId: id, name: 'go', payload: null });
      await untilBlockedBy(pid);
      const suspending = store.append([env(id, 1)], { status: 'suspended', wakeOnSignalsAfter: 0 });
      await untilBlockedBy(pid, 2);
      await holder.query('COMMIT');
      // The signal took the row first and saw it running (no wake); the suspension's snapshot
      // has no signal, but the row it updates says signal 1 came: due at once.
      expect((await sending).signalId).toBe(1);
      await suspending;
    } finally {
      holder.release();
    }
    const row = await indexRow(schema, id);
    expect(row.status).toBe('suspended');
    expect(row.wakeAtMs).not.toBeNull();
    expect(await store.claimDue(Date.now() + 60_000, 1_000)).toContain(id);
  });

  it('an unclaimDue queued behind a settle leaves it settled; alone it is one round trip (ADR 0052)', async () => {
    const settling = freshId('unclaim-settle');
    const claimed = freshId('unclaim-claimed');
    await store.append([env(settling, 0)], { status: 'running' });
    await store.append([env(claimed, 0)], { status: 'suspended', wakeAtMs: 1_000 });
    expect(await store.claimDue(5_000, 1_000)).toContain(claimed);
    const x = `${quoteIdent(schema)}.executions`;
    // Stands in for the settling append: it holds the index row until it commits, and the
    // give-back's statement started while the row still said 'running'.
    const writer = await db.admin.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(`UPDATE ${x} SET status = 'settled' WHERE execution_id = $1`, [settling]);
      const pid = (await writer.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      const givingBack = peer.unclaimDue([settling], 6_000);
      await untilBlockedBy(pid);
      await writer.query('COMMIT');
      expect(await givingBack).toEqual([]);
    } finally {
      writer.release();
    }
    expect(await indexRow(schema, settling)).toEqual({ status: 'settled', wakeAtMs: null });
    let given: string[] = [];
    expect(await trips(store, async () => (given = await store.unclaimDue([claimed], 6_000)))).toBe(
      1,
    );
    expect(given).toEqual([claimed]);
    expect(await indexRow(schema, claimed)).toEqual({ status: 'suspended', wakeAtMs: 6_000 });
  });

  it('refuses bad claimDue arguments with INVALID_ARGUMENT', async () => {
    for (const [nowMs, limit] of [
      [-1, 10],
      [1.5, 10],
      [Number.NaN, 10],
      [1, 0],
      [1, 10_001],
      [1, 2.5],
    ]) {
      expect(await codeOf(store.claimDue(nowMs as number, limit as number))).toBe(
        ErrorCode.INVALID_ARGUMENT,
      );
    }
  });

  it('a read-only store reads inboxes but refuses sendSignal, claimDue and unclaimDue', async () => {
    const id = freshId('ro');
    await store.append([env(id, 0)], { status: 'running' });
    await store.sendSignal({ executionId: id, name: 'a', payload: [1] });
    const reader = await PostgresEventStore.open({ connectionString: url, schema, readOnly: true });
    try {
      expect((await reader.readSignals(id)).map((signal) => signal.payload)).toEqual([[1]]);
      expect(await codeOf(reader.sendSignal({ executionId: id, name: 'a', payload: null }))).toBe(
        ErrorCode.STORE_READ_ONLY,
      );
      expect(await codeOf(reader.claimDue(1, 1))).toBe(ErrorCode.STORE_READ_ONLY);
      expect(await codeOf(reader.unclaimDue([id], 1))).toBe(ErrorCode.STORE_READ_ONLY);
    } finally {
      await reader.close();
    }
  });
});

describe('PostgresEventStore: claimDue', () => {
  it('two pools claiming 100 due executions at once claim each exactly once', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const nodes = await Promise.all([
      PostgresEventStore.open({ connectionString: url, schema }),
      PostgresEventStore.open({ connectionString: url, schema }),
    ]);
    try {
      const [first] = nodes as [PostgresEventStore, PostgresEventStore];
      const due = Array.from({ length: 100 }, (_, index) => freshId(`due-${index}`));
      for (const [index, id] of due.entries()) {
        await first.append([env(id, 0)], { status: 'suspended', wakeAtMs: 1_000 + index });
      }
      const later = freshId('later');
      await first.append([env(later, 0)], { status: 'suspended', wakeAtMs: 50_000 });
      // Four claim loops per node, small batches, so claims interleave and contend.
      const loop = async (node: PostgresEventStore): Promise<string[]> => {
        const mine: string[] = [];
        for (;;) {
          const batch = await node.claimDue(10_000, 7);
          if (batch.length === 0) return mine;
          mine.push(...batch);
        }
      };
      const claims = await Promise.all(nodes.flatMap((node) => [1, 2, 3, 4].map(() => loop(node))));
      const all = claims.flat();
      expect(all).toHaveLength(100);
      expect(new Set(all)).toEqual(new Set(due));
      expect(claims.filter((batch) => batch.length > 0).length).toBeGreaterThan(1);
      const running = await first.findExecutions({ status: 'running' });
      expect(running.map((summary) => summary.executionId).sort()).toEqual([...due].sort());
      expect(await first.claimDue(10_000, 100)).toEqual([]);
      expect(await first.claimDue(50_000, 100)).toEqual([later]);
    } finally {
      await Promise.all(nodes.map((node) => node.close()));
    }
  });

  it('finds its candidates through executions_status_wake_idx, in wake order, without a sort', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const client = await db.admin.connect();
    try {
      await client.query('BEGIN');
      // The generic plan is the one a prepared statement settles on; forbidding sequential scans
      // asks whether an index can serve the query at all, whatever the table's size.
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query('SET LOCAL enable_seqscan = off');
      const statement = claimDueStatement(quoteIdent(schema), schema);
      await client.query(`PREPARE claim_plan AS ${statement.text}`);
      // Every flow, and kept to the flows a node runs (ADR 0043), with the claimer named or not
      // (ADR 0063): the same scan either way.
      for (const flows of ['NULL, NULL, NULL', "'{billing}', '{NULL}', 'node-a'"]) {
        const plan = await client.query(
          `EXPLAIN (COSTS OFF) EXECUTE claim_plan(1, 2, 3, ${flows})`,
        );
        const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
        expect(text).toMatch(/Index Scan using executions_status_wake_idx/);
        expect(text).not.toMatch(/Sort/);
      }
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

describe('PostgresEventStore: signals on an older schema', () => {
  it('a version-2 schema is SCHEMA_NOT_MIGRATED for signals and appends, keeps its log, and upgrades to the latest', async () => {
    const schema = freshSchema();
    const quoted = quoteIdent(schema);
    await db.admin.query(`CREATE SCHEMA ${quoted}`);
    const older = postgresMigrations.filter((migration) => migration.version <= 2);
    for (const migration of older) {
      for (const statement of migration.statements(quoted)) await db.admin.query(statement);
    }
    await db.admin.query(`INSERT INTO ${quoted}.loom_schema_version (version) VALUES (2)`);
    const id = freshId('v2');
    // What an append of a Loom at schema version 2 left: the event and its index row.
    const payload = JSON.stringify({ n: 0 });
    await db.admin.query(
      `INSERT INTO ${quoted}.events (execution_id, sequence, type, payload, at, prev_hash, hash)
       VALUES ($1, 0, 'test.event', $2, 1, NULL, $3)`,
      [id, payload, eventHash(null, id, 0, 'test.event', 1, payload)],
    );
    await db.admin.query(
      `INSERT INTO ${quoted}.executions (execution_id, status, wake_at_ms, updated_at_ms)
       VALUES ($1, 'suspended', 5, 1)`,
      [id],
    );
    const store = await PostgresEventStore.open({ connectionString: url, schema });
    try {
      const notMigrated = {
        code: ErrorCode.SCHEMA_NOT_MIGRATED,
        fields: { expected: latestSchemaVersion, actual: 2 },
      };
      // Appends write the execution index columns of migration 5.
      await expect(store.append([env(id, 1)])).rejects.toMatchObject(notMigrated);
      await expect(
        store.sendSignal({ executionId: id, name: 'a', payload: null }),
      ).rejects.toMatchObject(notMigrated);
      await expect(store.readSignals(id)).rejects.toThrow(/run migrate\(\)/);
      await expect(store.claimDue(10, 10)).rejects.toMatchObject(notMigrated);
      const result = await migrate({ pool: db.admin, schema });
      expect(result).toMatchObject({ fromVersion: 2, toVersion: latestSchemaVersion });
      expect(result.applied).toEqual(
        postgresMigrations.filter((migration) => migration.version > 2).map((m) => m.name),
      );
      // The same store, not reopened, notices the migration on its next call.
      expect(await store.sendSignal({ executionId: id, name: 'a', payload: null })).toEqual({
        signalId: 1,
        duplicate: false,
      });
      expect(await store.claimDue(Date.now() + 60_000, 10)).toEqual([id]);
      expect(await store.verify(id)).toMatchObject({ ok: true, events: 1 });
    } finally {
      await store.close();
    }
  });
});
