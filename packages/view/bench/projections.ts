// Projections: how many subscriber calls a burst of 1,000 events costs (coalesced delivery), and
// how fast the projector folds the log (events/s), on memory, SQLite and Postgres.
// Run: pnpm --filter @loom/view exec tsx bench/projections.ts   (LOOM_TEST_PG for another Postgres)
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  type Backend,
  type EventEnvelope,
  openMemory,
  type StoredEvent,
} from '@loom/event-runtime';
import { openPostgres } from '@loom/event-runtime/postgres';
import { openSqlite } from '@loom/event-runtime/sqlite';
import Database from 'better-sqlite3';
import pg from 'pg';
import {
  catchUpProjections,
  createProjectionTables,
  type ProjectionDb,
  sqliteProjectionDb,
} from '../src/index.js';
import { openProjectionDb } from '../src/projection/projection-db.js';

const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `view_bench_proj_${process.pid}`;
const rounds = Number(process.env.ROUNDS ?? 5);
const burst = 1_000;
const batchSize = 500;
const foldRuns = Number(process.env.RUNS ?? 1_000); // × 10 events each

const dir = mkdtempSync(join(tmpdir(), 'loom-view-bench-proj-'));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const range = (xs: number[]) => `${Math.min(...xs)}..${Math.max(...xs)}`;

async function dropSchema(): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}

interface Target {
  name: string;
  open(): Promise<{ backend: Backend; projections: ProjectionDb }>;
}

const targets: Target[] = [
  {
    name: 'memory',
    open: async () => {
      const projections = sqliteProjectionDb(new Database(':memory:'));
      await createProjectionTables(projections);
      return { backend: openMemory(), projections };
    },
  },
  {
    name: 'sqlite',
    open: async () => {
      const path = join(dir, `bench-${performance.now()}.db`);
      const backend = openSqlite({ path, migrate: true });
      const projections = await openProjectionDb({ kind: 'sqlite', path }, false);
      await createProjectionTables(projections);
      return { backend, projections };
    },
  },
  {
    name: 'postgres',
    open: async () => {
      await dropSchema();
      const backend = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
      const projections = await openProjectionDb(
        { kind: 'postgres', connectionString: pgUrl, schema },
        false,
      );
      await createProjectionTables(projections);
      return { backend, projections };
    },
  },
];

/** A run of 10 events: started, 3 steps (one an agent decision with a priced model call), completed. */
function runEvents(executionId: string, agent: boolean): EventEnvelope[] {
  const flow = agent ? 'agent:bench' : 'bench';
  const decision = {
    provider: 'stub',
    model: 'stub-model',
    text: 'ok',
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 100, outputTokens: 20, cachedInputTokens: 0 },
    costUsd: 0.0006,
    latencyMs: 3,
  };
  const types: [string, object][] = [
    ['execution.started', { flow, version: '1', input: null }],
    ['step.started', { index: 0, name: agent ? 'decide:1' : 'a' }],
    ['step.completed', { index: 0, name: agent ? 'decide:1' : 'a', result: agent ? decision : 1 }],
    ['step.started', { index: 1, name: 'b' }],
    ['step.completed', { index: 1, name: 'b', result: 2 }],
    ['step.started', { index: 2, name: 'c' }],
    ['step.completed', { index: 2, name: 'c', result: 3 }],
    ['timer.scheduled', { index: 3, name: 'nap', wakeAtMs: 1 }],
    ['timer.fired', { index: 3, name: 'nap' }],
    ['execution.completed', { output: agent ? { reason: 'goal_completed' } : 3 }],
  ];
  return types.map(([type, payload], sequence) => ({
    executionId,
    sequence,
    type,
    payload: payload as never,
  }));
}

/** Subscriber calls for 1,000 events appended at once as `appends` appends. */
async function burstCalls(backend: Backend, appends: number, tag: string): Promise<number> {
  const per = burst / appends;
  const last = (await readTail(backend))?.position ?? 0;
  let seen = 0;
  let calls = 0;
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  const subscription = backend.events.subscribe({ afterPosition: last, batchSize }, (batch) => {
    calls += 1;
    seen += batch.length;
    if (seen >= burst) done();
  });
  await Promise.all(
    Array.from({ length: appends }, (_, i) =>
      backend.events.append(
        Array.from({ length: per }, (_, sequence) => ({
          executionId: `${tag}-${i}`,
          sequence,
          type: sequence === 0 ? 'execution.started' : 'step.started',
          payload:
            sequence === 0
              ? { flow: 'burst', version: null, input: i }
              : { index: sequence, name: 's' },
        })),
      ),
    ),
  );
  await Promise.race([
    all,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error('burst not delivered in 60 s')), 60_000),
    ),
  ]);
  await subscription.close();
  return calls;
}

async function readTail(backend: Backend): Promise<StoredEvent | undefined> {
  let last: StoredEvent | undefined;
  for (;;) {
    const page = await backend.events.readAll({
      afterPosition: last?.position ?? 0,
      limit: 10_000,
    });
    if (page.length === 0) return last;
    last = page[page.length - 1];
  }
}

async function reset(projections: ProjectionDb): Promise<void> {
  await projections.db.deleteFrom('loom_projection_runs').execute();
  await projections.db.deleteFrom('loom_projection_approvals').execute();
  await projections.db.deleteFrom('loom_projection_model_calls').execute();
  await projections.db
    .updateTable('loom_projection_checkpoints')
    .set({ position: 0, events: 0 })
    .execute();
}

console.log(
  `node ${process.version}, load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}, ${new Date().toISOString()}`,
);
const table: string[] = [];
for (const target of targets) {
  const { backend, projections } = await target.open();
  try {
    const calls100: number[] = [];
    const calls1000: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      calls100.push(await burstCalls(backend, 100, `b100-${round}`));
      calls1000.push(await burstCalls(backend, 1_000, `b1000-${round}`));
    }
    for (let i = 0; i < foldRuns; i += 1) {
      await backend.events.append(runEvents(`run-${String(i).padStart(5, '0')}`, i % 4 === 0), {
        status: 'settled',
      } as never);
    }
    const total = foldRuns * 10 + rounds * 2 * burst;
    const rates: number[] = [];
    const flushes: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      await reset(projections);
      const started = performance.now();
      const stats = await catchUpProjections({ events: backend.events, projections, batchSize });
      const ms = performance.now() - started;
      if (stats.applied !== total) throw new Error(`folded ${stats.applied}, expected ${total}`);
      rates.push(Math.round(total / (ms / 1_000)));
      flushes.push(stats.flushes);
    }
    table.push(
      `| ${target.name} | ${median(calls100)} (${range(calls100)}) | ${median(calls1000)} (${range(calls1000)}) | ${median(rates).toLocaleString('en-US')} (${range(rates)}) | ${total.toLocaleString('en-US')} in ${median(flushes)} |`,
    );
    console.log(table[table.length - 1]);
  } finally {
    await projections.close();
    await backend.close();
  }
}
await dropSchema();
rmSync(dir, { recursive: true, force: true });
console.log(
  `\nload average after ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
);
console.log(
  '| Backend | subscriber calls, 1,000 events in 100 appends | … in 1,000 appends | projector events/s (catch-up, batch 500) | events in flushes |',
);
console.log('|---|---|---|---|---|');
for (const line of table) console.log(line);
