import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import type { ExecutionSummary } from '../../envelope.js';
import { eventHash } from '../../internal/hash-chain.js';
import { findExecutionsOptions } from '../../internal/read-options.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { findExecutionsQuery } from './find-executions-statement.js';
import { migrate } from './migrate.js';
import { postgresMigrations } from './migrations/migration-list.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { PostgresQueueStore } from './postgres-queue-store.js';
import { queueStatements } from './queue-statements.js';
import { quoteIdent } from './schema-name.js';

const db = useThrowawaySchemas();
const url = pgTestUrl;

const ids = (summaries: ExecutionSummary[]) => summaries.map((summary) => summary.executionId);

/** A schema at `version`, made by that version's migrations exactly as they shipped. */
async function schemaAt(version: number): Promise<{ schema: string; quoted: string }> {
  const schema = db.freshSchema();
  const quoted = quoteIdent(schema);
  await db.admin.query(`CREATE SCHEMA ${quoted}`);
  for (const migration of postgresMigrations.filter((m) => m.version <= version)) {
    for (const statement of migration.statements(quoted)) await db.admin.query(statement);
  }
  await db.admin.query(`INSERT INTO ${quoted}.loom_schema_version (version) VALUES ($1)`, [
    version,
  ]);
  return { schema, quoted };
}

/**
 * Writes a log and its index row the way a Loom at schema version 4 did (hash chain included):
 * events, then `(execution_id, status, wake_at_ms, updated_at_ms)` from the last status change.
 */
async function oldExecution(
  client: pg.Pool,
  quoted: string,
  executionId: string,
  events: Array<{ type: string; payload: unknown; at: number }>,
  index: { status: string; wakeAtMs?: number; updatedAtMs: number } | undefined,
): Promise<void> {
  let prevHash: string | null = null;
  for (const [sequence, event] of events.entries()) {
    const payload = JSON.stringify(event.payload);
    const hash = eventHash(prevHash, executionId, sequence, event.type, event.at, payload);
    await client.query(
      `INSERT INTO ${quoted}.events (execution_id, sequence, type, payload, at, prev_hash, hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [executionId, sequence, event.type, payload, event.at, prevHash, hash],
    );
    prevHash = hash;
  }
  if (index === undefined) return;
  await client.query(
    `INSERT INTO ${quoted}.executions (execution_id, status, wake_at_ms, updated_at_ms)
     VALUES ($1, $2, $3, $4)`,
    [executionId, index.status, index.wakeAtMs ?? null, index.updatedAtMs],
  );
}

const started = (flow: string, version: string | null, at: number) => ({
  type: 'execution.started',
  payload: { flow, version, input: { n: 1 } },
  at,
});

describe('PostgresEventStore: findExecutions on an upgraded schema', () => {
  it('migration 5 backfills flow, version, creation and how each execution ended from the log', async () => {
    const { schema, quoted } = await schemaAt(4);
    const flow = freshId('order');
    const [completed, failed, running, suspended, continued, bare] = [
      'a',
      'b',
      'c',
      'd',
      'e',
      'f',
    ].map((suffix) => `${flow}-${suffix}`) as [string, string, string, string, string, string];
    await oldExecution(
      db.admin,
      quoted,
      completed,
      [
        started(flow, '1', 1_000),
        { type: 'step.started', payload: {}, at: 1_001 },
        { type: 'execution.completed', payload: { output: 1 }, at: 2_000 },
      ],
      { status: 'settled', updatedAtMs: 2_000 },
    );
    await oldExecution(
      db.admin,
      quoted,
      failed,
      [started(flow, null, 1_100), { type: 'execution.failed', payload: {}, at: 2_100 }],
      { status: 'settled', updatedAtMs: 2_100 },
    );
    await oldExecution(db.admin, quoted, running, [started(flow, '1', 1_200)], {
      status: 'running',
      updatedAtMs: 1_200,
    });
    await oldExecution(
      db.admin,
      quoted,
      suspended,
      [started(flow, '2', 1_300), { type: 'execution.suspended', payload: {}, at: 1_350 }],
      { status: 'suspended', wakeAtMs: 9_000, updatedAtMs: 1_350 },
    );
    await oldExecution(
      db.admin,
      quoted,
      continued,
      [
        started(flow, '1', 1_400),
        { type: 'execution.continued_as_new', payload: { successorId: 'x' }, at: 2_400 },
      ],
      { status: 'settled', updatedAtMs: 2_400 },
    );
    // Not a kernel log: indexed, but with no flow to tell.
    await oldExecution(db.admin, quoted, bare, [{ type: 'test.event', payload: 5, at: 1_500 }], {
      status: 'settled',
      updatedAtMs: 1_500,
    });

    const result = await migrate({ pool: db.admin, schema });
    expect(result.fromVersion).toBe(4);
    expect(result.applied[0]).toBe('0005-execution-index-details');

    const store = await PostgresEventStore.open({ connectionString: url, schema });
    try {
      expect(ids(await store.findExecutions({ flow }))).toEqual([
        completed,
        failed,
        running,
        suspended,
        continued,
      ]);
      expect(ids(await store.findExecutions({ flow, status: 'completed' }))).toEqual([completed]);
      expect(ids(await store.findExecutions({ status: 'failed' }))).toEqual([failed]);
      expect(ids(await store.findExecutions({ status: 'continued' }))).toEqual([continued]);
      expect(ids(await store.findExecutions({ flow, version: null }))).toEqual([failed]);
      expect(ids(await store.findExecutions({ flow, createdFromMs: 1_300 }))).toEqual([
        suspended,
        continued,
      ]);
      expect(await store.findExecutions({ flow, status: 'suspended' })).toEqual([
        {
          executionId: suspended,
          status: 'suspended',
          settledAs: null,
          flow,
          version: '2',
          startedBy: null,
          wakeAtMs: 9_000,
          createdAtMs: 1_300,
          updatedAtMs: 1_350,
          lastEventAt: 1_350,
          nextSequence: 2,
        },
      ]);
      expect(await store.findExecutions({ status: 'settled', createdBeforeMs: 1_501 })).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ executionId: bare, flow: null, settledAs: null }),
        ]),
      );
      // The recovery and timer callers' queries answer as before the upgrade.
      expect(ids(await store.findExecutions({ status: 'running' }))).toEqual([running]);
      expect(await store.claimDue(9_000, 10)).toEqual([suspended]);

      // A new append after the upgrade keeps what the backfill found for the execution.
      await store.append(
        [
          {
            executionId: running,
            sequence: 1,
            type: 'execution.cancelled',
            payload: {},
            at: 3_000,
          },
        ],
        { status: 'settled' },
      );
      expect(await store.findExecutions({ flow, status: 'cancelled' })).toMatchObject([
        { executionId: running, flow, version: '1', createdAtMs: 1_200, updatedAtMs: 3_000 },
      ]);
      expect(await store.verify(running)).toMatchObject({ ok: true, events: 2 });
    } finally {
      await store.close();
    }
  });
});

describe('PostgresEventStore: who started an execution, on an upgraded schema', () => {
  it('migration 8 takes who started each execution lazily from its execution.started', async () => {
    const { schema, quoted } = await schemaAt(7);
    const flow = freshId('started-by');
    const logs: Array<[string, unknown]> = [
      [`${flow}-a`, { flow, version: null, input: null, node: 'worker-1' }],
      [`${flow}-b`, { flow, version: null, input: null }],
      [`${flow}-c`, { flow, version: null, input: null, node: 7 }],
    ];
    for (const [id, payload] of logs) {
      await oldExecution(
        db.admin,
        quoted,
        id,
        [{ type: 'execution.started', payload, at: 1_000 }],
        undefined,
      );
      await db.admin.query(
        `INSERT INTO ${quoted}.executions
           (execution_id, status, updated_at_ms, flow, version, created_at_ms)
         VALUES ($1, 'running', 1000, $2, NULL, 1000)`,
        [id, flow],
      );
    }
    const result = await migrate({ pool: db.admin, schema });
    expect(result).toMatchObject({
      fromVersion: 7,
      applied: [
        '0008-started-by',
        '0009-live-chunks',
        '0010-runs-page-order',
        '0011-queue-partition-limits',
        '0012-queue-flow-control',
        '0013-queue-debounce',
        '0014-waiting-for',
        '0015-claimed-by',
      ],
    });
    const store = await PostgresEventStore.open({ connectionString: url, schema });
    try {
      const found = await store.findExecutions({ flow });
      expect(found.map((summary) => [summary.executionId, summary.startedBy])).toEqual([
        [`${flow}-a`, 'worker-1'],
        [`${flow}-b`, null],
        [`${flow}-c`, null],
      ]);
    } finally {
      await store.close();
    }
  });
});

describe('PostgresEventStore: migration 10, the runs page orders', () => {
  it('adds the keyset indexes of the runs page, and the newest-first page is served by one', async () => {
    const { schema, quoted } = await schemaAt(9);
    for (const [id, at] of [
      ['old', 1_000],
      ['new', 3_000],
      ['mid', 2_000],
    ] as const) {
      await oldExecution(db.admin, quoted, id, [started('order', null, at)], undefined);
      await db.admin.query(
        `INSERT INTO ${quoted}.executions
           (execution_id, status, updated_at_ms, flow, version, created_at_ms)
         VALUES ($1, 'running', $2, 'order', NULL, $2)`,
        [id, at],
      );
    }
    const result = await migrate({ pool: db.admin, schema });
    expect(result).toMatchObject({
      fromVersion: 9,
      applied: [
        '0010-runs-page-order',
        '0011-queue-partition-limits',
        '0012-queue-flow-control',
        '0013-queue-debounce',
        '0014-waiting-for',
        '0015-claimed-by',
      ],
    });
    const indexes = await db.admin.query<{ indexname: string }>(
      'SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname',
      [schema],
    );
    expect(indexes.rows.map((row) => row.indexname)).toEqual(
      expect.arrayContaining([
        'executions_created_id_idx',
        'executions_settled_as_updated_id_idx',
        'executions_status_updated_id_idx',
        'executions_updated_id_idx',
      ]),
    );
    // The keyset page after 'new' (newest first): with sequential scans priced out, as they are
    // on a large table, the plan walks executions_updated_id_idx backwards and sorts nothing.
    const client = await db.admin.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      const sql = `SELECT execution_id FROM ${quoted}.executions x
        WHERE (x.updated_at_ms, x.execution_id) < ($1::bigint, $2::text)
        ORDER BY x.updated_at_ms DESC, x.execution_id DESC LIMIT 2`;
      const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, [3_000, 'new']);
      const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
      expect(text).toMatch(/Index (Only )?Scan Backward using executions_updated_id_idx/);
      expect(text).not.toMatch(/Sort/);
      const page = await client.query<{ execution_id: string }>(sql, [3_000, 'new']);
      expect(page.rows.map((row) => row.execution_id)).toEqual(['mid', 'old']);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });
});

describe('PostgresEventStore: what the execution index costs', () => {
  it('starting, suspending and settling an execution still cost one round trip each', async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const store = await PostgresEventStore.open({ connectionString: url, schema });
    try {
      const trips = async (call: () => Promise<unknown>) => {
        const before = store.stats.roundTrips;
        await call();
        return store.stats.roundTrips - before;
      };
      const id = freshId('cost');
      const flow = freshId('flow');
      const envelope = (sequence: number, type: string, payload: unknown = {}) => ({
        executionId: id,
        sequence,
        type,
        payload: payload as never,
      });
      expect(
        await trips(() =>
          store.append([
            envelope(0, 'execution.started', { flow, version: '3', input: null }),
            envelope(1, 'step.started'),
          ]),
        ),
      ).toBe(1);
      expect(
        await trips(() =>
          store.append([envelope(2, 'execution.suspended')], {
            fenceEpoch: 0,
            status: 'suspended',
            wakeAtMs: 50,
          }),
        ),
      ).toBe(1);
      expect(await trips(() => store.append([envelope(3, 'timer.fired')], { fenceEpoch: 0 }))).toBe(
        1,
      );
      expect(
        await trips(() =>
          store.append([envelope(4, 'execution.failed')], { fenceEpoch: 0, status: 'settled' }),
        ),
      ).toBe(1);
      let found: ExecutionSummary[] = [];
      expect(
        await trips(async () => {
          found = await store.findExecutions({
            flow,
            version: '3',
            status: 'failed',
            createdFromMs: 0,
            updatedBeforeMs: Number.MAX_SAFE_INTEGER,
          });
        }),
      ).toBe(1);
      expect(found).toMatchObject([{ executionId: id, flow, version: '3', settledAs: 'failed' }]);
    } finally {
      await store.close();
    }
  });

  it('each filter shape is served by the index its comment names', async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const client = await db.admin.connect();
    const planOf = async (options: Parameters<typeof findExecutionsOptions>[0], name: string) => {
      const { statement, values } = findExecutionsQuery(
        quoteIdent(schema),
        schema,
        findExecutionsOptions(options),
      );
      await client.query(`PREPARE ${name} AS ${statement.text}`);
      const args = values.map((value) =>
        value === null ? 'NULL' : typeof value === 'number' ? String(value) : `'${value}'`,
      );
      const plan = await client.query(`EXPLAIN (COSTS OFF) EXECUTE ${name}(${args.join(', ')})`);
      return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
    };
    try {
      await client.query('BEGIN');
      // The generic plan is the one a prepared statement settles on; forbidding sequential scans
      // asks whether an index can serve the query at all, whatever the table's size.
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query('SET LOCAL enable_seqscan = off');
      expect(await planOf({ flow: 'order', status: 'running' }, 'p_flow')).toMatch(
        /Index Scan using executions_flow_id_idx/,
      );
      expect(await planOf({ status: 'failed' }, 'p_settled_as')).toMatch(
        /Index Scan using executions_settled_as_id_idx/,
      );
      expect(await planOf({ status: 'running' }, 'p_status')).toMatch(
        /Index Scan using executions_status_id_idx/,
      );
      const due = await planOf({ status: 'suspended', dueAtOrBeforeMs: 10 }, 'p_due');
      expect(due).toMatch(/executions_status_(id|wake)_idx/);
      expect(due).not.toMatch(/Seq Scan/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

describe('PostgresEventStore: the signal mark on an upgraded schema', () => {
  it("migration 7 records each inbox's newest id on its index row, so a guarded suspension sees signals sent before the upgrade", async () => {
    const { schema, quoted } = await schemaAt(6);
    const rows: Array<[string, number]> = [
      ['mark-two', 2],
      ['mark-none', 0],
    ];
    for (const [id, signals] of rows) {
      await db.admin.query(
        `INSERT INTO ${quoted}.executions
           (execution_id, status, wake_at_ms, updated_at_ms, settled_as, flow, version, created_at_ms)
         VALUES ($1, 'running', NULL, 1000, NULL, 'f', NULL, 1000)`,
        [id],
      );
      for (let signalId = 1; signalId <= signals; signalId++) {
        await db.admin.query(
          `INSERT INTO ${quoted}.signals (execution_id, signal_id, name, payload, at)
           VALUES ($1, $2, 'go', 'null', 1000)`,
          [id, signalId],
        );
      }
    }
    const result = await migrate({ pool: db.admin, schema });
    expect(result.applied).toEqual([
      '0007-signal-mark',
      '0008-started-by',
      '0009-live-chunks',
      '0010-runs-page-order',
      '0011-queue-partition-limits',
      '0012-queue-flow-control',
      '0013-queue-debounce',
      '0014-waiting-for',
      '0015-claimed-by',
    ]);
    const marks = await db.admin.query(
      `SELECT execution_id, last_signal_id::int AS mark FROM ${quoted}.executions ORDER BY 1`,
    );
    expect(marks.rows).toEqual([
      { execution_id: 'mark-none', mark: 0 },
      { execution_id: 'mark-two', mark: 2 },
    ]);
  });
});

describe('PostgresQueueStore: outcomes and stats on an upgraded schema', () => {
  it('migration 6 takes finished items’ outcomes from their executions; stats count them', async () => {
    const { schema, quoted } = await schemaAt(5);
    const queue = 'emails';
    for (const [itemId, status] of [
      ['ok', 'done'],
      ['bad', 'done'],
      ['stopped', 'done'],
      ['waiting', 'pending'],
    ] as const) {
      await db.admin.query(
        `INSERT INTO ${quoted}.queue_items
           (queue, item_id, flow, version, input, priority, status, enqueued_at_ms)
         VALUES ($1, $2, 'send', NULL, 'null', 0, $3, 1)`,
        [queue, itemId, status],
      );
    }
    await db.admin.query(`INSERT INTO ${quoted}.queues (queue) VALUES ($1)`, [queue]);
    const ended = { ok: 'execution.completed', bad: 'execution.failed', stopped: undefined };
    for (const [itemId, terminal] of Object.entries(ended)) {
      const events = [started('send', null, 1_000)];
      if (terminal !== undefined) events.push({ type: terminal, payload: {}, at: 2_000 } as never);
      else events.push({ type: 'execution.cancelled', payload: {}, at: 2_000 } as never);
      await oldExecution(db.admin, quoted, `queue:${queue}:${itemId}`, events, undefined);
    }
    // Migration 5 on the executions first (as `migrate` runs them in order), then rows for 6.
    await db.admin.query(
      `INSERT INTO ${quoted}.executions
         (execution_id, status, wake_at_ms, updated_at_ms, settled_as, flow, version, created_at_ms)
       VALUES ($1, 'settled', NULL, 2000, 'completed', 'send', NULL, 1000),
              ($2, 'settled', NULL, 2000, 'failed', 'send', NULL, 1000),
              ($3, 'settled', NULL, 2000, 'cancelled', 'send', NULL, 1000)`,
      [`queue:${queue}:ok`, `queue:${queue}:bad`, `queue:${queue}:stopped`],
    );
    const result = await migrate({ pool: db.admin, schema });
    expect(result.applied).toEqual([
      '0006-queue-outcomes',
      '0007-signal-mark',
      '0008-started-by',
      '0009-live-chunks',
      '0010-runs-page-order',
      '0011-queue-partition-limits',
      '0012-queue-flow-control',
      '0013-queue-debounce',
      '0014-waiting-for',
      '0015-claimed-by',
    ]);
    const queues = await PostgresQueueStore.open({ connectionString: url, schema });
    try {
      expect((await queues.get(queue, 'ok'))?.outcome).toBe('completed');
      expect((await queues.get(queue, 'bad'))?.outcome).toBe('failed');
      expect((await queues.get(queue, 'stopped'))?.outcome).toBe('cancelled');
      expect((await queues.get(queue, 'waiting'))?.outcome).toBeNull();
      expect(await queues.queueStats(queue)).toEqual({
        queue,
        depth: 1,
        claimed: 0,
        completed: 1,
        failed: 1,
        cancelled: 1,
      });
    } finally {
      await queues.close();
    }
  });

  it('migration 11: items enqueued before it have no limit of their own and claim as before', async () => {
    const { schema, quoted } = await schemaAt(10);
    const queue = 'tenants';
    await db.admin.query(`INSERT INTO ${quoted}.queues (queue) VALUES ($1)`, [queue]);
    for (const itemId of ['old-0', 'old-1']) {
      await db.admin.query(
        `INSERT INTO ${quoted}.queue_items
           (queue, item_id, flow, version, input, priority, partition_key, status, enqueued_at_ms)
         VALUES ($1, $2, 'send', NULL, 'null', 0, 'A', 'pending', 1)`,
        [queue, itemId],
      );
    }
    const result = await migrate({ pool: db.admin, schema });
    expect(result).toMatchObject({
      fromVersion: 10,
      applied: [
        '0011-queue-partition-limits',
        '0012-queue-flow-control',
        '0013-queue-debounce',
        '0014-waiting-for',
        '0015-claimed-by',
      ],
    });
    const queues = await PostgresQueueStore.open({ connectionString: url, schema });
    try {
      expect((await queues.get(queue, 'old-0'))?.partitionConcurrencyMax).toBeNull();
      expect((await queues.get(queue, 'old-0'))?.throttle).toBeNull();
      await queues.enqueue({
        queue,
        itemId: 'new-0',
        flow: 'send',
        input: null,
        partitionKey: 'A',
        partitionConcurrencyMax: 2,
      });
      const options = { owner: 'n', limit: 10, claimTtlMs: 60_000 };
      // The old items have no limit of their own: both run; then A holds 2, new-0's own limit.
      const claimed = await queues.claim(queue, options);
      expect(claimed.map((item) => item.itemId)).toEqual(['old-0', 'old-1']);
      expect(await queues.claim(queue, options)).toEqual([]);
    } finally {
      await queues.close();
    }
  });

  it('queue stats read the primary key in queue order, without a sort', async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const client = await db.admin.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query('SET LOCAL enable_seqscan = off');
      const statements = queueStatements(quoteIdent(schema), schema);
      for (const [name, statement] of [
        ['stats_plan', statements.stats],
        ['list_plan', statements.list],
      ] as const) {
        await client.query(`PREPARE ${name} AS ${statement.text}`);
        const plan = await client.query(`EXPLAIN (COSTS OFF) EXECUTE ${name}('q', 1, 10)`);
        const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
        expect(text).toMatch(/Index Scan using queue_items_pkey/);
        expect(text).not.toMatch(/Sort/);
      }
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
