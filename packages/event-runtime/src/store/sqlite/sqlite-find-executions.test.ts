import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { ExecutionSummary } from '../../envelope.js';
import { eventHash } from '../../internal/hash-chain.js';
import { SqliteEventStore } from './sqlite-event-store.js';
import { sqliteMigrations } from './sqlite-migrations.js';
import { SqliteQueueStore } from './sqlite-queue-store.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-sqlite-find-'));
let fileCounter = 0;
const freshPath = () => join(directory, `store-${++fileCounter}.db`);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const ids = (summaries: ExecutionSummary[]) => summaries.map((summary) => summary.executionId);

/** A database file at `version`, made by that version's migrations exactly as they shipped. */
function databaseAt(version: number): { path: string; database: Database.Database } {
  const path = freshPath();
  const database = new Database(path);
  for (const migration of sqliteMigrations.filter((m) => m.version <= version)) {
    database.exec(migration.sql);
  }
  database.pragma(`user_version = ${version}`);
  return { path, database };
}

/** Writes a log and its index row the way a Loom at schema version 4 did (hash chain included). */
function oldExecution(
  database: Database.Database,
  executionId: string,
  events: Array<{ type: string; payload: unknown; at: number }>,
  index: { status: string; wakeAtMs?: number; updatedAtMs: number },
): void {
  let prevHash: string | null = null;
  for (const [sequence, event] of events.entries()) {
    const payload = JSON.stringify(event.payload);
    const hash = eventHash(prevHash, executionId, sequence, event.type, event.at, payload);
    database
      .prepare(
        'INSERT INTO loom_events (execution_id, sequence, type, payload, at, prev_hash, hash) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(executionId, sequence, event.type, payload, event.at, prevHash, hash);
    prevHash = hash;
  }
  database
    .prepare(
      'INSERT INTO loom_executions (execution_id, status, wake_at_ms, updated_at_ms) ' +
        'VALUES (?, ?, ?, ?)',
    )
    .run(executionId, index.status, index.wakeAtMs ?? null, index.updatedAtMs);
}

const started = (flow: string, version: string | null, at: number) => ({
  type: 'execution.started',
  payload: { flow, version, input: null },
  at,
});

describe('SqliteEventStore: findExecutions on an upgraded database', () => {
  it('migration 5 backfills flow, version, creation and how each execution ended from the log', async () => {
    const { path, database } = databaseAt(4);
    oldExecution(
      database,
      'a',
      [
        started('order', '1', 1_000),
        { type: 'step.started', payload: {}, at: 1_001 },
        { type: 'execution.completed', payload: { output: 1 }, at: 2_000 },
      ],
      { status: 'settled', updatedAtMs: 2_000 },
    );
    oldExecution(
      database,
      'b',
      [started('order', null, 1_100), { type: 'execution.cancelled', payload: {}, at: 2_100 }],
      { status: 'settled', updatedAtMs: 2_100 },
    );
    oldExecution(
      database,
      'c',
      [started('order', '2', 1_200), { type: 'execution.suspended', payload: {}, at: 1_250 }],
      { status: 'suspended', wakeAtMs: 7_000, updatedAtMs: 1_250 },
    );
    oldExecution(database, 'd', [started('payment', '1', 1_300)], {
      status: 'running',
      updatedAtMs: 1_300,
    });
    oldExecution(database, 'e', [{ type: 'test.event', payload: [1], at: 1_400 }], {
      status: 'settled',
      updatedAtMs: 1_400,
    });
    database.close();

    const store = SqliteEventStore.open({ path, migrate: true });
    try {
      expect(ids(await store.findExecutions({ flow: 'order' }))).toEqual(['a', 'b', 'c']);
      expect(ids(await store.findExecutions({ status: 'completed' }))).toEqual(['a']);
      expect(ids(await store.findExecutions({ status: 'cancelled' }))).toEqual(['b']);
      expect(ids(await store.findExecutions({ flow: 'order', version: null }))).toEqual(['b']);
      expect(ids(await store.findExecutions({ createdFromMs: 1_200 }))).toEqual(['c', 'd', 'e']);
      expect(await store.findExecutions({ flow: 'order', status: 'suspended' })).toEqual([
        {
          executionId: 'c',
          status: 'suspended',
          settledAs: null,
          flow: 'order',
          version: '2',
          startedBy: null,
          wakeAtMs: 7_000,
          createdAtMs: 1_200,
          updatedAtMs: 1_250,
          lastEventAt: 1_250,
          nextSequence: 2,
        },
      ]);
      expect(await store.findExecutions({ status: 'settled' })).toMatchObject([
        { executionId: 'a', settledAs: 'completed' },
        { executionId: 'b', settledAs: 'cancelled' },
        { executionId: 'e', settledAs: null, flow: null, createdAtMs: 1_400 },
      ]);
      // The recovery and timer callers' queries answer as before the upgrade.
      expect(ids(await store.findExecutions({ status: 'running' }))).toEqual(['d']);
      expect(await store.claimDue(7_000, 10)).toEqual(['c']);
      // A new append after the upgrade keeps what the backfill found for the execution.
      await store.append(
        [{ executionId: 'd', sequence: 1, type: 'execution.failed', payload: {}, at: 3_000 }],
        { status: 'settled' },
      );
      expect(await store.findExecutions({ status: 'failed' })).toMatchObject([
        { executionId: 'd', flow: 'payment', version: '1', createdAtMs: 1_300, updatedAtMs: 3_000 },
      ]);
      expect(await store.verify('d')).toMatchObject({ ok: true, events: 2 });
    } finally {
      await store.close();
    }
  });

  it('migration 7 takes who started each execution lazily from its execution.started', async () => {
    const { path, database } = databaseAt(6);
    const logs: Array<[string, unknown]> = [
      ['lazy', { flow: 'order', version: null, input: null, node: 'worker-1' }],
      ['eager', { flow: 'order', version: null, input: null }],
      ['odd', { flow: 'order', version: null, input: null, node: 7 }],
    ];
    for (const [id, payload] of logs) {
      oldExecution(database, id, [{ type: 'execution.started', payload, at: 1_000 }], {
        status: 'running',
        updatedAtMs: 1_000,
      });
    }
    database.close();
    const store = SqliteEventStore.open({ path, migrate: true });
    try {
      const found = await store.findExecutions({ status: 'running' });
      expect(found.map((summary) => [summary.executionId, summary.startedBy])).toEqual([
        ['eager', null],
        ['lazy', 'worker-1'],
        ['odd', null],
      ]);
    } finally {
      await store.close();
    }
  });

  it('migration 9 adds the keyset indexes of the runs page: newest first, no sort, no OFFSET', async () => {
    const { path, database } = databaseAt(8);
    for (const [id, at] of [
      ['old', 1_000],
      ['new', 3_000],
      ['mid', 2_000],
    ] as const) {
      oldExecution(database, id, [{ type: 'execution.started', payload: { flow: 'order' }, at }], {
        status: 'running',
        updatedAtMs: at,
      });
    }
    database.close();
    const store = SqliteEventStore.open({ path, migrate: true });
    try {
      const plan = (sql: string, ...values: unknown[]) =>
        (
          store.database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...values) as Array<{
            detail: string;
          }>
        )
          .map((row) => row.detail)
          .join('\n');
      const page =
        'SELECT execution_id FROM loom_executions x WHERE (x.updated_at_ms, x.execution_id) < (?, ?) ' +
        'ORDER BY x.updated_at_ms DESC, x.execution_id DESC LIMIT 2';
      expect(plan(page, 3_000, 'new')).toMatch(/INDEX loom_executions_updated/);
      expect(plan(page, 3_000, 'new')).not.toMatch(/TEMP B-TREE/);
      expect(
        plan(
          'SELECT execution_id FROM loom_executions x WHERE x.settled_as = ? ' +
            'ORDER BY x.updated_at_ms DESC, x.execution_id DESC LIMIT 2',
          'failed',
        ),
      ).toMatch(/INDEX loom_executions_settled_as_updated/);
      expect(
        plan(
          'SELECT execution_id FROM loom_executions x ' +
            'ORDER BY x.created_at_ms, x.execution_id LIMIT 2',
        ),
      ).toMatch(/INDEX loom_executions_created/);
      const rows = store.database.prepare(page).all(3_000, 'new') as Array<{
        execution_id: string;
      }>;
      expect(rows.map((row) => row.execution_id)).toEqual(['mid', 'old']);
    } finally {
      await store.close();
    }
  });

  it('a flow filter and a way of ending are each served by their index', () => {
    const { database } = databaseAt(sqliteMigrations.length);
    try {
      const plan = (sql: string, ...values: unknown[]) =>
        (database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...values) as Array<{ detail: string }>)
          .map((row) => row.detail)
          .join('\n');
      expect(
        plan(
          'SELECT execution_id FROM loom_executions x WHERE x.execution_id > ? AND x.flow = ? ' +
            'ORDER BY x.execution_id LIMIT 10',
          '',
          'order',
        ),
      ).toMatch(/USING (COVERING )?INDEX loom_executions_flow/);
      expect(
        plan(
          'SELECT execution_id FROM loom_executions x WHERE x.execution_id > ? AND x.status = ? ' +
            'AND x.settled_as = ? ORDER BY x.execution_id LIMIT 10',
          '',
          'settled',
          'failed',
        ),
      ).toMatch(/INDEX loom_executions_(settled_as|status)/);
    } finally {
      database.close();
    }
  });
});

describe('SqliteQueueStore: outcomes on an upgraded database', () => {
  it('migration 6 takes finished items’ outcomes from their executions; stats count them', async () => {
    const { path, database } = databaseAt(4);
    const insert = database.prepare(
      'INSERT INTO loom_queue_items (queue, item_id, flow, version, input, priority, status, ' +
        "enqueued_at_ms) VALUES ('jobs', ?, 'job', NULL, 'null', 0, ?, 1)",
    );
    for (const [itemId, status] of [
      ['ok', 'done'],
      ['bad', 'done'],
      ['manual', 'done'],
      ['waiting', 'pending'],
    ] as const) {
      insert.run(itemId, status);
    }
    oldExecution(
      database,
      'queue:jobs:ok',
      [started('job', null, 1_000), { type: 'execution.completed', payload: {}, at: 2_000 }],
      { status: 'settled', updatedAtMs: 2_000 },
    );
    oldExecution(
      database,
      'queue:jobs:bad',
      [started('job', null, 1_000), { type: 'execution.failed', payload: {}, at: 2_000 }],
      { status: 'settled', updatedAtMs: 2_000 },
    );
    database.close();
    const store = SqliteEventStore.open({ path, migrate: true });
    const queues = new SqliteQueueStore(store.database);
    try {
      expect((await queues.get('jobs', 'ok'))?.outcome).toBe('completed');
      expect((await queues.get('jobs', 'bad'))?.outcome).toBe('failed');
      // Finished without an execution the index knows: it completed, as complete() said then.
      expect((await queues.get('jobs', 'manual'))?.outcome).toBe('completed');
      expect((await queues.get('jobs', 'waiting'))?.outcome).toBeNull();
      expect(await queues.listQueues()).toEqual([
        { queue: 'jobs', depth: 1, claimed: 0, completed: 2, failed: 1, cancelled: 0 },
      ]);
    } finally {
      await queues.close();
      await store.close();
    }
  });
});

describe('SqliteEventStore: what the execution index costs', () => {
  it('only appends that start an execution or change its status write an index row', async () => {
    const store = SqliteEventStore.open({ path: freshPath(), migrate: true });
    const rowsWritten = async (call: () => Promise<unknown>) => {
      const total = () =>
        store.database.prepare('SELECT total_changes() AS n').pluck().get() as number;
      const before = total();
      await call();
      return total() - before;
    };
    const id = 'cost-1';
    const envelope = (sequence: number, type: string, payload: unknown = {}) => ({
      executionId: id,
      sequence,
      type,
      payload: payload as never,
    });
    try {
      // Two events and the index row, in the append's one transaction.
      expect(
        await rowsWritten(() =>
          store.append([
            envelope(0, 'execution.started', { flow: 'order', version: null, input: null }),
            envelope(1, 'step.started'),
          ]),
        ),
      ).toBe(3);
      expect(await rowsWritten(() => store.append([envelope(2, 'step.completed')]))).toBe(1);
      expect(
        await rowsWritten(() =>
          store.append([envelope(3, 'execution.completed')], { status: 'settled' }),
        ),
      ).toBe(2);
      expect(await store.findExecutions({ flow: 'order', status: 'completed' })).toMatchObject([
        { executionId: id },
      ]);
    } finally {
      await store.close();
    }
  });
});
