/**
 * P2 (ADR 0030): `PostgresEventStore.append`, one event per call, against the same store behind
 * a `CoalescingEventStore` (maxBatch 1, 16, 64), interleaved in one run, at c = 8, 32, 64. Every
 * variant gets its own store on its own pool of 10 connections. Per cell: events/s, the ratio to
 * per-event append in the same repeat, Postgres statements per append (counted, from
 * `stats.roundTrips`), the mean batch size, CPU per event (this process + the Postgres server
 * processes) and latency percentiles.
 *
 * Then P3 beside it: 1-step no-op flows through the kernel runtime (leases off, caller ids, as
 * in `bench`), three ways interleaved: the runtime's group commit off (every execution's append
 * on its own), on (the default, ADR 0040: one turn's appends in one `appendBatch`), and off
 * over `CoalescingEventStore` (maxBatch 64); rows checked against 2n + 2 per execution.
 *
 * Then SQLite (synchronous=FULL): per-event against coalesced (one transaction per batch), at
 * LOOM_BENCH_SQLITE_CONCS (default 1,8,64; empty string: none), maxBatch 16 and 64.
 *
 * Then P4: 1-step no-op flows on SQLite FULL, the same three ways (group commit off, on, and
 * the coalescing store), beside the raw one-transaction-per-event floor measured in the same
 * repeats, at LOOM_BENCH_SQLITE_FLOW_CONCS (default 16,64; empty string: none), with
 * LOOM_BENCH_SQLITE_EXECS executions per cell (default 1024).
 *
 * Knobs: LOOM_BENCH_PG_URL, LOOM_BENCH_CONCS (default 8,32,64; empty string: no
 * Postgres append cells), LOOM_BENCH_COALESCE_EVENTS
 * (appends per cell, default 2048), LOOM_BENCH_REPEATS (default 5), LOOM_BENCH_MAX_BATCHES
 * (maxBatch values, default 1,16,64), LOOM_BENCH_MAX_IN_FLIGHT (default 1),
 * LOOM_BENCH_GROUP_BATCHES (the runtime group commit's maxBatch in the flow cells, one variant
 * each, default 64), LOOM_BENCH_FLOW_CONCS (default 16,64; empty string: no flow cells), LOOM_BENCH_PG_EXECS
 * (executions per flow cell, default 1024).
 *
 * Usage: pnpm --filter @loom/bench-throughput bench:coalesce
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoalescingEventStore, type EventStore } from '@loom/event-runtime';
import { groupCommitBatchDefault } from '@loom/event-runtime/kernel';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import pg from 'pg';
import {
  type AppendMeasurement,
  measureAppends,
  rawSqliteAppender,
  storeAppender,
} from './append-suite.js';
import {
  type BenchBackend,
  dropPostgres,
  openPostgres,
  openSqlite,
  type PgTarget,
  pgPoolSize,
  reachPostgres,
} from './bench-backend.js';
import { sqliteCoalesceCells } from './coalesce-sqlite-cells.js';
import {
  type ExecutionCellResult,
  type ExecutionCellSpec,
  runExecutionCell,
} from './execution-cell.js';
import { formatCount, formatMs, formatRatio } from './format-number.js';
import { rotatingOrder } from './interleave.js';
import { roundToConcurrency } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { busyShareBetween, readCpuJiffies } from './proc-stat.js';
import { median } from './stats.js';

const url = process.env.LOOM_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/test';
const list = (value: string | undefined, fallback: number[]) =>
  value ? value.split(',').map((item) => Number(item.trim())) : fallback;
const concurrencies =
  process.env.LOOM_BENCH_CONCS === '' ? [] : list(process.env.LOOM_BENCH_CONCS, [8, 32, 64]);
const maxBatches = list(process.env.LOOM_BENCH_MAX_BATCHES, [1, 16, 64]);
const maxInFlight = Number(process.env.LOOM_BENCH_MAX_IN_FLIGHT || 1);
const flowConcurrencies =
  process.env.LOOM_BENCH_FLOW_CONCS === '' ? [] : list(process.env.LOOM_BENCH_FLOW_CONCS, [16, 64]);
const flowExecutions = Number(process.env.LOOM_BENCH_PG_EXECS || 1024);
const sqliteConcurrencies =
  process.env.LOOM_BENCH_SQLITE_CONCS === ''
    ? []
    : list(process.env.LOOM_BENCH_SQLITE_CONCS, [1, 8, 64]);
const sqliteFlowConcurrencies =
  process.env.LOOM_BENCH_SQLITE_FLOW_CONCS === ''
    ? []
    : list(process.env.LOOM_BENCH_SQLITE_FLOW_CONCS, [16, 64]);
const sqliteFlowExecutions = Number(process.env.LOOM_BENCH_SQLITE_EXECS || 1024);
const eventsPerCell = Number(process.env.LOOM_BENCH_COALESCE_EVENTS || 2048);
// The runtime's group commit in the flow cells, one variant per maxBatch (default: the runtime's).
const groupBatches = list(process.env.LOOM_BENCH_GROUP_BATCHES, [groupCommitBatchDefault]);
const groupVariants = (
  backend: BenchBackend,
): Array<[string, BenchBackend, Pick<ExecutionCellSpec, 'groupCommit'>]> =>
  groupBatches.map((maxBatch) => [
    groupBatches.length === 1 && maxBatch === groupCommitBatchDefault
      ? 'group commit'
      : `group commit ${maxBatch}`,
    backend,
    maxBatch === groupCommitBatchDefault ? {} : { groupCommit: { maxBatch } },
  ]);
const repeats = Number(process.env.LOOM_BENCH_REPEATS || 5);
const goalRatio = 2.5;

interface Variant {
  name: string;
  store: EventStore;
  postgres: PostgresEventStore;
  coalescing: CoalescingEventStore | undefined;
}

interface Cell {
  variant: string;
  concurrency: number;
  repeat: number;
  result: AppendMeasurement;
  statementsPerAppend: number;
  meanBatch: number | null;
}

async function main(): Promise<void> {
  const target = await reachPostgres(url);
  if (typeof target === 'string') {
    console.log(`bench:coalesce: Postgres at ${url} is not reachable (${target}): SQLite only`);
    if (sqliteConcurrencies.length > 0) {
      await sqliteCoalesceCells(sqliteConcurrencies, [16, 64], eventsPerCell, repeats);
    }
    if (sqliteFlowConcurrencies.length > 0) await sqliteFlowCells();
    return;
  }
  const before = readCpuJiffies();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const after = readCpuJiffies();
  const busy = before && after ? busyShareBetween(before, after) : Number.NaN;
  const startedAt = new Date();
  console.log(
    `bench:coalesce ${startedAt.toISOString()}, machine ${Math.round(busy * 100)} % busy in the second before`,
  );
  const pools: pg.Pool[] = [];
  const variants: Variant[] = [];
  const open = async () => {
    const pool = new pg.Pool({ connectionString: url, max: pgPoolSize });
    pool.on('error', () => {});
    pools.push(pool);
    return PostgresEventStore.open({ pool, schema: target.schema });
  };
  try {
    const first = await open();
    await first.migrate();
    variants.push({ name: 'per-event', store: first, postgres: first, coalescing: undefined });
    for (const maxBatch of maxBatches) {
      const postgres = await open();
      const coalescing = new CoalescingEventStore(postgres, { maxBatch, maxInFlight });
      variants.push({ name: `coalesced ${maxBatch}`, store: coalescing, postgres, coalescing });
    }
    for (const variant of variants) {
      await measureAppends(storeAppender(variant.store), `warm-${variant.name}`, 16, 512, () => {});
    }
    const cells: Cell[] = [];
    for (const concurrency of concurrencies) {
      const events = roundToConcurrency(eventsPerCell, concurrency);
      for (let repeat = 0; repeat < repeats; repeat++) {
        for (const variant of rotatingOrder(variants, repeat)) {
          process.stderr.write(
            `c=${concurrency} ${variant.name} repeat ${repeat + 1}/${repeats}\n`,
          );
          const tripsBefore = variant.postgres.stats.roundTrips;
          const batchesBefore = variant.coalescing?.stats.batches ?? 0;
          const result = await measureAppends(
            storeAppender(variant.store),
            `p2-${variant.name.replace(' ', '')}-c${concurrency}-r${repeat}`,
            concurrency,
            events,
            () => {},
            true,
          );
          const batches = (variant.coalescing?.stats.batches ?? 0) - batchesBefore;
          cells.push({
            variant: variant.name,
            concurrency,
            repeat,
            result,
            statementsPerAppend: (variant.postgres.stats.roundTrips - tripsBefore) / events,
            meanBatch: variant.coalescing === undefined ? null : events / batches,
          });
        }
      }
    }
    const rows = (
      await target.admin.query(`SELECT count(*)::int AS n FROM ${target.schema}.events`)
    ).rows[0].n as number;
    const expected =
      variants.length * 512 +
      concurrencies.reduce(
        (sum, c) => sum + roundToConcurrency(eventsPerCell, c) * repeats * variants.length,
        0,
      );
    if (rows !== expected) throw new Error(`the log holds ${rows} events, expected ${expected}`);
    console.log(`\n${rows} events written and counted in the log.\n`);
    if (concurrencies.length > 0) {
      report(
        cells,
        variants.map((variant) => variant.name),
      );
    }
    if (flowConcurrencies.length > 0) await flowCells(target);
    if (sqliteConcurrencies.length > 0) {
      await sqliteCoalesceCells(sqliteConcurrencies, [16, 64], eventsPerCell, repeats);
    }
    if (sqliteFlowConcurrencies.length > 0) await sqliteFlowCells();
    console.log(`\nwall time ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s`);
  } finally {
    for (const variant of variants) await variant.store.close();
    for (const pool of pools) await pool.end();
    await dropPostgres(target);
  }
}

interface FlowCell {
  variant: string;
  concurrency: number;
  repeat: number;
  result: ExecutionCellResult;
}

/** P3 beside P2: 1-step flows with the runtime's group commit off and on, and behind the coalescing store. */
async function flowCells(target: PgTarget): Promise<void> {
  const plain = await openPostgres(target);
  const coalescing = new CoalescingEventStore(plain.events, { maxBatch: 64, maxInFlight });
  try {
    await compareFlows(
      'P3 beside it: 1-step no-op flows through the kernel runtime (leases off)',
      [
        ['group commit off', plain, { groupCommit: false }],
        ...groupVariants(plain),
        ['coalesced 64', { ...plain, events: coalescing }, { groupCommit: false }],
      ],
      flowConcurrencies,
      flowExecutions,
    );
  } finally {
    await coalescing.close();
    await plain.close().catch(() => undefined);
  }
}

/**
 * P4: 1-step flows on SQLite (`synchronous=FULL`), one transaction per append against the
 * coalescing store's one transaction per batch (group commit across executions), beside the
 * raw floor measured in the same repeats: better-sqlite3 with one `BEGIN IMMEDIATE; INSERT;
 * COMMIT` per event, at the same concurrency.
 */
async function sqliteFlowCells(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'loom-bench-p4-'));
  const plain = openSqlite(directory, 'p4-per-event', 'FULL');
  const grouped = openSqlite(directory, 'p4-coalesced', 'FULL');
  const coalescing = new CoalescingEventStore(grouped.events, { maxBatch: 64 });
  const raw = rawSqliteAppender(join(directory, 'p4-raw.db'), 'FULL');
  try {
    await compareFlows(
      'P4: 1-step no-op flows on SQLite FULL (leases off), group commit against one transaction per append',
      [
        ['group commit off', plain, { groupCommit: false }],
        ...groupVariants(plain),
        ['coalesced 64', { ...grouped, events: coalescing }, { groupCommit: false }],
      ],
      sqliteFlowConcurrencies,
      sqliteFlowExecutions,
      async (concurrency, repeat) =>
        (
          await measureAppends(
            raw.append,
            `p4-raw-c${concurrency}-r${repeat}`,
            concurrency,
            roundToConcurrency(sqliteFlowExecutions, concurrency),
            () => {},
          )
        ).eventsPerSec,
    );
  } finally {
    await coalescing.close();
    await plain.close().catch(() => undefined);
    await grouped.close().catch(() => undefined);
    raw.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * Runs 1-step flow cells on each backend, interleaved in rotating order per repeat, and prints
 * exec/s with the ratio to the first backend of the same repeat. With `floor`, a raw append
 * loop measured at the same concurrency in the same repeat (events/s) is printed beside it,
 * with each backend's exec/s ÷ that floor.
 */
async function compareFlows(
  title: string,
  backends: Array<[string, BenchBackend, Pick<ExecutionCellSpec, 'groupCommit'>]>,
  concurrencies: readonly number[],
  requestedExecutions: number,
  floor?: (concurrency: number, repeat: number) => Promise<number>,
): Promise<void> {
  const baseline = backends[0]?.[0] as string;
  const cells: FlowCell[] = [];
  const floors: Array<{ concurrency: number; repeat: number; eventsPerSec: number }> = [];
  for (const concurrency of concurrencies) {
    const executions = roundToConcurrency(requestedExecutions, concurrency);
    for (let repeat = 0; repeat < repeats; repeat++) {
      for (const [variant, backend, options] of rotatingOrder(backends, repeat)) {
        process.stderr.write(`flows c=${concurrency} ${variant} repeat ${repeat + 1}/${repeats}\n`);
        const result = await runExecutionCell(
          backend,
          {
            cellId: `${backend.kind}-${variant.replace(' ', '')}-c${concurrency}-r${repeat}`,
            steps: 1,
            effectMs: 0,
            concurrency,
            executions,
            ids: 'caller',
            leaseMode: 'off',
            ...options,
          },
          () => {},
        );
        cells.push({ variant, concurrency, repeat, result });
      }
      if (floor !== undefined) {
        process.stderr.write(`raw floor c=${concurrency} repeat ${repeat + 1}/${repeats}\n`);
        floors.push({ concurrency, repeat, eventsPerSec: await floor(concurrency, repeat) });
      }
    }
  }
  const range = (values: number[], format: (value: number) => string) =>
    `${format(median(values))} (${format(Math.min(...values))}..${format(Math.max(...values))})`;
  const rows: string[][] = [];
  for (const concurrency of concurrencies) {
    const floorOf = (repeat: number) =>
      floors.find((entry) => entry.concurrency === concurrency && entry.repeat === repeat)
        ?.eventsPerSec ?? Number.NaN;
    for (const [variant] of backends) {
      const mine = cells.filter(
        (cell) => cell.variant === variant && cell.concurrency === concurrency,
      );
      const ratios = mine.map((cell) => {
        const base = cells.find(
          (other) =>
            other.variant === baseline &&
            other.concurrency === concurrency &&
            other.repeat === cell.repeat,
        );
        return cell.result.execPerSec / (base?.result.execPerSec ?? Number.NaN);
      });
      const row = [
        `${concurrency}`,
        variant,
        range(
          mine.map((cell) => cell.result.execPerSec),
          formatCount,
        ),
        variant === baseline ? '' : range(ratios, formatRatio),
        median(mine.map((cell) => cell.result.appendsPerWrite)).toFixed(1),
      ];
      if (floor !== undefined) {
        row.push(
          range(
            mine.map((cell) => floorOf(cell.repeat)),
            formatCount,
          ),
          range(
            mine.map((cell) => cell.result.execPerSec / floorOf(cell.repeat)),
            formatRatio,
          ),
        );
      } else {
        row.push(
          median(mine.map((cell) => cell.result.roundTripsPerExecution ?? Number.NaN)).toFixed(2),
          median(
            mine.map((cell) => cell.result.clientAndDbCpuMsPerExecution ?? Number.NaN),
          ).toFixed(2),
        );
      }
      row.push(
        `${formatMs(median(mine.map((cell) => cell.result.latencyMs.p50)))} / ${formatMs(median(mine.map((cell) => cell.result.latencyMs.p99)))}`,
      );
      rows.push(row);
    }
  }
  const headers = [
    'c',
    'store',
    'exec/s median (min..max)',
    `÷ ${baseline}, same repeat`,
    'appends per write',
    ...(floor === undefined
      ? ['Postgres statements per execution', 'node + pg CPU ms/execution']
      : ['raw floor, events/s (one transaction each)', 'exec/s ÷ floor, same repeat']),
    'p50 / p99 ms',
  ];
  console.log(`\n${title}\n`);
  console.log(
    markdownTable(
      headers,
      rows,
      headers.map((_, index) => (index === 1 ? 'left' : 'right')),
    ),
  );
}

function report(cells: Cell[], names: string[]): void {
  const rows: string[][] = [];
  for (const concurrency of concurrencies) {
    for (const name of names) {
      const mine = cells.filter(
        (cell) => cell.variant === name && cell.concurrency === concurrency,
      );
      const rates = mine.map((cell) => cell.result.eventsPerSec);
      const ratios = mine
        .map((cell) => {
          const base = cells.find(
            (other) =>
              other.variant === 'per-event' &&
              other.concurrency === concurrency &&
              other.repeat === cell.repeat,
          );
          return base === undefined
            ? Number.NaN
            : cell.result.eventsPerSec / base.result.eventsPerSec;
        })
        .filter((ratio) => Number.isFinite(ratio));
      const ratio = median(ratios);
      const batch = mine.map((cell) => cell.meanBatch).filter((value) => value !== null);
      rows.push([
        `${concurrency}`,
        name,
        `${formatCount(median(rates))} (${formatCount(Math.min(...rates))}..${formatCount(Math.max(...rates))})`,
        name === 'per-event'
          ? ''
          : `${formatRatio(ratio)} (${formatRatio(Math.min(...ratios))}..${formatRatio(Math.max(...ratios))})`,
        median(mine.map((cell) => cell.statementsPerAppend)).toFixed(3),
        batch.length === 0 ? '' : median(batch as number[]).toFixed(1),
        formatCount(median(mine.map((cell) => cell.result.clientAndDbCpuUsPerEvent ?? Number.NaN))),
        `${formatMs(median(mine.map((cell) => cell.result.latencyMs.p50)))} / ${formatMs(median(mine.map((cell) => cell.result.latencyMs.p99)))}`,
        name === 'per-event' ? '' : ratio >= goalRatio ? 'met' : 'missed',
      ]);
    }
  }
  console.log(
    markdownTable(
      [
        'c',
        'writer',
        'events/s median (min..max)',
        '÷ per-event, same repeat',
        'statements per append',
        'appends per batch',
        'node + pg CPU µs/event',
        'p50 / p99 ms',
        `goal ≥ ${goalRatio}×`,
      ],
      rows,
      ['right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    ),
  );
}

await main();
