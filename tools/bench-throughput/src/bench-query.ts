/**
 * ADR 0061: what a query costs beside `status()`, on SQLite and Postgres. A query reads the
 * execution's whole log and replays the flow over it read-only in the asking process; `status()`
 * reads the log's state too (one store read, no replay). Each cell is an execution suspended
 * after `steps` plain steps (2 × steps + 3 events), a query handler registered before them;
 * samples of `runtime.query` and `runtime.status` alternate on the same execution (rotating which
 * goes first), after a warm-up. Also asserts that the queries wrote nothing (events counted
 * before and after).
 *
 * Knobs: LOOM_BENCH_PG_URL, LOOM_BENCH_SAMPLES (default 200 per cell and operation),
 * LOOM_BENCH_STEPS (log lengths, default 1,10,100,1000).
 *
 * Usage: pnpm --filter @loom/bench-throughput bench:query
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '@loom/event-runtime';
import { openPostgres } from '@loom/event-runtime/postgres';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow, defineQuery } from '@loom/workflow-runtime';
import { dropPostgres, reachPostgres } from './bench-backend.js';
import { markdownTable } from './markdown-table.js';
import { formatNumber, intKnob, listKnob } from './script-knobs.js';
import { latencies } from './stats.js';

const url = process.env.LOOM_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/test';
const samples = intKnob('LOOM_BENCH_SAMPLES', 200);
const stepCounts = listKnob('LOOM_BENCH_STEPS', [1, 10, 100, 1000]);
const warmup = 20;

const progress = defineQuery<void, number>('progress');
const flow = defineFlow({ name: 'bench.query' }, async (ctx, input: { steps: number }) => {
  let done = 0;
  ctx.onQuery(progress, () => done);
  for (let index = 0; index < input.steps; index++) {
    await ctx.step(`step-${index}`, () => index);
    done++;
  }
  await ctx.waitForSignal('never');
  return done;
});

interface Row {
  backend: string;
  steps: number;
  events: number;
  query: { p50: number; p99: number };
  status: { p50: number; p99: number };
}

async function measure(name: string, backend: Backend, rows: Row[]): Promise<void> {
  const runtime = createRuntime({ backend, flows: [flow], timerPollMs: 0, closeBackend: false });
  try {
    for (const steps of stepCounts) {
      const executionId = `query-${steps}`;
      await runtime.start(flow, { steps }, { executionId });
      for (let poll = 0; runtime.activeExecutions.includes(executionId); poll++) {
        if (poll > 6_000) throw new Error(`${executionId} did not suspend within 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const events = (await backend.events.read(executionId, { limit: 10_000 })).length;
      const queryMs: number[] = [];
      const statusMs: number[] = [];
      const query = async () => {
        const at = performance.now();
        const done = await runtime.query(progress, executionId);
        if (done !== steps) throw new Error(`query answered ${done}, want ${steps}`);
        return performance.now() - at;
      };
      const status = async () => {
        const at = performance.now();
        await runtime.status(executionId);
        return performance.now() - at;
      };
      for (let index = 0; index < warmup; index++) await Promise.all([query(), status()]);
      for (let index = 0; index < samples; index++) {
        if (index % 2 === 0) {
          queryMs.push(await query());
          statusMs.push(await status());
        } else {
          statusMs.push(await status());
          queryMs.push(await query());
        }
      }
      const after = (await backend.events.read(executionId, { limit: 10_000 })).length;
      if (after !== events) throw new Error(`queries wrote ${after - events} events`);
      rows.push({
        backend: name,
        steps,
        events,
        query: latencies(queryMs),
        status: latencies(statusMs),
      });
    }
  } finally {
    await runtime.shutdown();
  }
}

const rows: Row[] = [];
const directory = mkdtempSync(join(tmpdir(), 'loom-bench-query-'));
try {
  const sqlite = openSqlite({ path: join(directory, 'query.db'), migrate: true });
  try {
    await measure('sqlite', sqlite, rows);
  } finally {
    await sqlite.close();
  }
  const target = await reachPostgres(url);
  if (typeof target === 'string') {
    console.log(`bench:query: no Postgres at ${url} (${target}); Postgres not measured`);
  } else {
    const postgres = await openPostgres({
      connectionString: url,
      schema: target.schema,
      migrate: true,
    });
    try {
      await measure('postgres', postgres, rows);
    } finally {
      await postgres.close();
      await dropPostgres(target);
    }
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}

console.log(
  `\nbench:query: ${samples} samples per cell and operation, ${cpus().length} cores, load ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}, ${new Date().toISOString()}\n`,
);
const ms = (value: number) => formatNumber(value, 3);
console.log(
  markdownTable(
    [
      'backend',
      'steps',
      'events',
      'query p50 ms',
      'query p99 ms',
      'status p50 ms',
      'status p99 ms',
      'query / status (p50)',
    ],
    rows.map((row) => [
      row.backend,
      String(row.steps),
      String(row.events),
      ms(row.query.p50),
      ms(row.query.p99),
      ms(row.status.p50),
      ms(row.status.p99),
      `${(row.query.p50 / row.status.p50).toFixed(1)}×`,
    ]),
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  ),
);
