import { join } from 'node:path';
import type { EventStore } from '@loom/event-runtime';
import { bucketOf, channelName } from '@loom/event-runtime/testing';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openPostgres, openSqlite, type PgTarget, pgPoolSize } from './bench-backend.js';
import { payload256 } from './bench-flows.js';
import type { RunContext, SectionReport } from './bench-run.js';
import { collectGarbage } from './execution-cell.js';
import { formatCount, formatMs, formatRatio, formatSummary } from './format-number.js';
import { interleavedSchedule } from './interleave.js';
import { roundToConcurrency } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import {
  busyMsBetween,
  processBusyMsBetween,
  readCpuJiffies,
  readProcessJiffies,
} from './proc-stat.js';
import { type LatencyMs, latencies, median, summarize } from './stats.js';
import { lineChart } from './svg-chart.js';

/** P1's concurrency levels unless LOOM_BENCH_CONCS overrides them. */
export const appendConcurrencies = [1, 8, 32, 128, 256];
const goalRatio = 0.85;
/** The store's default NOTIFY channel count: the raw notify loop spreads over as many. */
const notifyBuckets = 16;
/** A 64-hex-digit stand-in hash for the raw loops (they do no hashing: that is the store's job). */
const fakeHash = 'f'.repeat(64);

export type AppendOnce = (executionId: string, sequence: number) => Promise<void>;

export interface AppendMeasurement {
  events: number;
  eventsPerSec: number;
  latencyMs: LatencyMs;
  machineCpuUsPerEvent: number | null;
  /** This process plus the Postgres server processes, µs per event (Postgres cells only). */
  clientAndDbCpuUsPerEvent: number | null;
  /** This process alone (user + system), µs per event. */
  processCpuUsPerEvent: number;
}

/**
 * `concurrency` writers, each appending the next sequence of its own execution, one event per
 * call, until `events` appends are done.
 */
export async function measureAppends(
  append: AppendOnce,
  idPrefix: string,
  concurrency: number,
  events: number,
  onProgress: (done: number) => void,
  postgres = false,
): Promise<AppendMeasurement> {
  const perWriter = events / concurrency;
  const latencyMs = new Float64Array(events);
  let done = 0;
  collectGarbage();
  const cpuBefore = readCpuJiffies();
  const dbBefore = postgres ? readProcessJiffies('postgres') : undefined;
  const processBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, writer) => {
      const executionId = `${idPrefix}-w${writer}`;
      for (let sequence = 0; sequence < perWriter; sequence++) {
        const t0 = performance.now();
        await append(executionId, sequence);
        latencyMs[writer * perWriter + sequence] = performance.now() - t0;
        if ((++done & 127) === 0) onProgress(done);
      }
    }),
  );
  const wallMs = performance.now() - started;
  const processCpu = process.cpuUsage(processBefore);
  const dbAfter = postgres ? readProcessJiffies('postgres') : undefined;
  const cpuAfter = readCpuJiffies();
  return {
    events,
    eventsPerSec: (events * 1000) / wallMs,
    latencyMs: latencies(latencyMs),
    machineCpuUsPerEvent:
      cpuBefore === undefined || cpuAfter === undefined
        ? null
        : (busyMsBetween(cpuBefore, cpuAfter) * 1000) / events,
    clientAndDbCpuUsPerEvent:
      dbBefore === undefined || dbAfter === undefined
        ? null
        : (processCpu.user + processCpu.system + processBusyMsBetween(dbBefore, dbAfter) * 1000) /
          events,
    processCpuUsPerEvent: (processCpu.user + processCpu.system) / events,
  };
}

export function storeAppender(store: EventStore): AppendOnce {
  const payload = payload256();
  return async (executionId, sequence) => {
    await store.append([
      { executionId, sequence, type: 'bench.appended', payload, at: Date.now() },
    ]);
  };
}

/**
 * The raw loop: one named prepared INSERT per event on a pool of the same size. With `notify`,
 * the same INSERT also calls pg_notify once on the channel the store would use (the store sends
 * one notification per append): a diagnostic that prices the notification alone.
 */
export function rawPgAppender(
  pool: pg.Pool,
  table: string,
  statementName: string,
  notifySchema?: string,
): AppendOnce {
  const payload = payload256();
  const insert =
    `INSERT INTO ${table} (execution_id, sequence, type, payload, at, prev_hash, hash) ` +
    'VALUES ($1, $2, $3, $4, $5, $6, $7)';
  const text =
    notifySchema === undefined
      ? insert
      : `WITH inserted AS (${insert} RETURNING sequence)
         SELECT pg_notify($8::text, inserted.sequence::text || ':' || $1::text) FROM inserted`;
  return async (executionId, sequence) => {
    const values: unknown[] = [
      executionId,
      sequence,
      'bench.appended',
      JSON.stringify(payload),
      Date.now(),
      sequence === 0 ? null : fakeHash,
      fakeHash,
    ];
    if (notifySchema !== undefined) {
      values.push(channelName(notifySchema, bucketOf(executionId, notifyBuckets)));
    }
    await pool.query({ name: statementName, text, values });
  };
}

/**
 * Raw tables with the log's columns: `raw_plain` with the same primary key only (the comparison
 * the goal names); `raw_indexed` with the log's unique position and (tx_id, position) index too,
 * and `raw_notify`, plain again but written by the notify loop (diagnostics: how much of a gap
 * is the table's shape, how much the notification).
 */
export async function createRawTables(target: PgTarget): Promise<void> {
  const columns = `execution_id text COLLATE "C" NOT NULL,
      sequence bigint NOT NULL, type text NOT NULL, payload text NOT NULL, at bigint NOT NULL,
      position bigint GENERATED ALWAYS AS IDENTITY, tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
      prev_hash text, hash text NOT NULL, PRIMARY KEY (execution_id, sequence)`;
  const s = target.schema;
  await target.admin.query(`CREATE TABLE ${s}.raw_plain (${columns})`);
  await target.admin.query(`CREATE TABLE ${s}.raw_indexed (${columns}, UNIQUE (position))`);
  await target.admin.query(`CREATE INDEX ON ${s}.raw_indexed (tx_id, position)`);
  await target.admin.query(`CREATE TABLE ${s}.raw_notify (${columns})`);
}

type PgVariant = 'store' | 'raw' | 'raw-indexed' | 'raw-notify';
const pgVariants: readonly PgVariant[] = ['store', 'raw', 'raw-indexed', 'raw-notify'];

interface PgAppendCell {
  variant: PgVariant;
  concurrency: number;
  repeat: number;
  result: AppendMeasurement;
}

async function postgresAppends(context: RunContext, target: PgTarget) {
  const { knobs, progress } = context;
  const concurrencies = knobs.concs ?? appendConcurrencies;
  await createRawTables(target);
  const backend = await openPostgres(target);
  const rawPool = new pg.Pool({ connectionString: target.url, max: pgPoolSize });
  rawPool.on('error', () => {});
  const appenders: Record<PgVariant, AppendOnce> = {
    store: storeAppender(backend.events),
    raw: rawPgAppender(rawPool, `${target.schema}.raw_plain`, 'bench-raw-plain'),
    'raw-indexed': rawPgAppender(rawPool, `${target.schema}.raw_indexed`, 'bench-raw-indexed'),
    'raw-notify': rawPgAppender(
      rawPool,
      `${target.schema}.raw_notify`,
      'bench-raw-notify',
      target.schema,
    ),
  };
  const variants = pgVariants;
  const cells: PgAppendCell[] = [];
  try {
    // Warm-up (not recorded): connections opened, statements prepared on every connection.
    for (const variant of variants) {
      await measureAppends(appenders[variant], `p1-warm-${variant}`, 16, 800, () => {});
    }
    for (const concurrency of concurrencies) {
      const events = roundToConcurrency(knobs.pgExecs, concurrency);
      for (const { repeat, variant } of interleavedSchedule(variants, knobs.repeats)) {
        const label = `P1 postgres ${variant} c=${concurrency} repeat ${repeat + 1}/${knobs.repeats}`;
        progress.update(label, true);
        const result = await measureAppends(
          appenders[variant],
          `p1-${variant}-c${concurrency}-r${repeat}`,
          concurrency,
          events,
          (done) => progress.update(`${label}: ${done}/${events} appends`),
          true,
        );
        cells.push({ variant, concurrency, repeat, result });
      }
    }
  } finally {
    await rawPool.end();
    await backend.close();
  }
  return { concurrencies, cells };
}

type SqliteVariant = 'store FULL' | 'raw FULL' | 'store NORMAL' | 'raw NORMAL';

/** The raw SQLite floor: WAL, one `BEGIN IMMEDIATE; INSERT; COMMIT` per event, same columns. */
export function rawSqliteAppender(
  path: string,
  synchronous: 'FULL' | 'NORMAL',
): { append: AppendOnce; close: () => void } {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec(`CREATE TABLE raw_events (position INTEGER PRIMARY KEY, execution_id TEXT NOT NULL,
    sequence INTEGER NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL, at INTEGER NOT NULL,
    prev_hash TEXT, hash TEXT NOT NULL);
    CREATE UNIQUE INDEX raw_events_execution_sequence ON raw_events (execution_id, sequence);`);
  const insert = db.prepare(
    'INSERT INTO raw_events (execution_id, sequence, type, payload, at, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const payload = payload256();
  const once = db.transaction((executionId: string, sequence: number) => {
    insert.run(
      executionId,
      sequence,
      'bench.appended',
      JSON.stringify(payload),
      Date.now(),
      sequence === 0 ? null : fakeHash,
      fakeHash,
    );
  });
  const append: AppendOnce = async (executionId, sequence) => {
    once.immediate(executionId, sequence);
  };
  return {
    append,
    close: () => {
      db.close();
    },
  };
}

async function sqliteAppends(context: RunContext) {
  const { knobs, progress, tmpDir } = context;
  const full = openSqlite(tmpDir, 'p1-store-full', 'FULL');
  const normal = openSqlite(tmpDir, 'p1-store-normal', 'NORMAL');
  const rawFull = rawSqliteAppender(join(tmpDir, 'p1-raw-full.db'), 'FULL');
  const rawNormal = rawSqliteAppender(join(tmpDir, 'p1-raw-normal.db'), 'NORMAL');
  const appenders: Record<SqliteVariant, AppendOnce> = {
    'store FULL': storeAppender(full.events),
    'raw FULL': rawFull.append,
    'store NORMAL': storeAppender(normal.events),
    'raw NORMAL': rawNormal.append,
  };
  const variants = Object.keys(appenders) as SqliteVariant[];
  const events = knobs.sqliteExecs;
  const cells: { variant: SqliteVariant; repeat: number; result: AppendMeasurement }[] = [];
  try {
    for (const variant of variants) {
      await measureAppends(appenders[variant], `p1-warm-${variant}`, 1, 200, () => {});
    }
    for (const { repeat, variant } of interleavedSchedule(variants, knobs.repeats)) {
      const label = `P1 sqlite ${variant} repeat ${repeat + 1}/${knobs.repeats}`;
      progress.update(label, true);
      const result = await measureAppends(
        appenders[variant],
        `p1-${variant.replace(' ', '-')}-r${repeat}`,
        1,
        events,
        (done) => progress.update(`${label}: ${done}/${events} appends`),
      );
      cells.push({ variant, repeat, result });
    }
  } finally {
    rawFull.close();
    rawNormal.close();
    await full.close();
    await normal.close();
  }
  return { variants, events, cells };
}

/** Paired per-repeat ratios a/b: both measured in the same repeat of the same run. */
function pairedRatios<V extends string>(
  cells: readonly { variant: V; repeat: number; result: AppendMeasurement }[],
  a: V,
  b: V,
): number[] {
  const ratios: number[] = [];
  for (const cell of cells) {
    if (cell.variant !== a) continue;
    const other = cells.find((c) => c.variant === b && c.repeat === cell.repeat);
    if (other !== undefined) ratios.push(cell.result.eventsPerSec / other.result.eventsPerSec);
  }
  return ratios;
}

/** P1: raw append on Postgres against a raw `pg` INSERT loop, and the SQLite floor. */
export async function appendSuite(context: RunContext): Promise<SectionReport> {
  const { knobs } = context;
  const lines: string[] = ['## P1: raw append', ''];
  const skipped: string[] = [];
  const json: unknown[] = [];
  lines.push(
    '```sh',
    `${context.command}   # the whole run`,
    `${context.commandFor('p1')}   # this section alone`,
    '```',
    '',
  );
  if (!knobs.backends.includes('postgres')) {
    skipped.push('postgres: not in LOOM_BENCH_BACKENDS');
  } else if (typeof context.pg === 'string') {
    skipped.push(`postgres: skipped, cannot reach the server (${context.pg})`);
  } else {
    const { concurrencies, cells } = await postgresAppends(context, context.pg);
    json.push({ backend: 'postgres', cells });
    const rows: string[][] = [];
    const series: Record<PgVariant, (number | null)[]> = {
      store: [],
      raw: [],
      'raw-indexed': [],
      'raw-notify': [],
    };
    for (const concurrency of concurrencies) {
      const at = cells.filter((cell) => cell.concurrency === concurrency);
      const of = (variant: PgVariant) => at.filter((cell) => cell.variant === variant);
      const rate = (variant: PgVariant) =>
        summarize(of(variant).map((cell) => cell.result.eventsPerSec));
      const p = (variant: PgVariant, key: 'p50' | 'p99') =>
        formatMs(median(of(variant).map((cell) => cell.result.latencyMs[key])));
      const cpu = (variant: PgVariant) => {
        const values = of(variant)
          .map((cell) => cell.result.clientAndDbCpuUsPerEvent)
          .filter((value): value is number => value !== null);
        return values.length === 0 ? '–' : formatCount(median(values));
      };
      const ratio = summarize(pairedRatios(at, 'store', 'raw'));
      const diagnostic = (variant: PgVariant) =>
        `${formatCount(rate(variant).median)} (${formatRatio(median(pairedRatios(at, 'store', variant)))})`;
      for (const variant of pgVariants) {
        series[variant].push(rate(variant).median);
      }
      rows.push([
        String(concurrency),
        formatCount(of('store')[0]?.result.events ?? 0),
        formatSummary(rate('store'), formatCount),
        formatSummary(rate('raw'), formatCount),
        formatSummary(ratio, formatRatio),
        `${p('store', 'p50')} / ${p('store', 'p99')}`,
        `${p('raw', 'p50')} / ${p('raw', 'p99')}`,
        `${cpu('store')} / ${cpu('raw')}`,
        diagnostic('raw-indexed'),
        diagnostic('raw-notify'),
        ratio.median >= goalRatio ? 'met' : 'missed',
      ]);
    }
    lines.push(
      `PostgresEventStore.append, one 256-byte event per call, each writer appending the next sequence of its own execution, against a raw \`pg\` loop of one named prepared INSERT per event into a table with the same columns and primary key; both on pools of ${pgPoolSize} connections; ${knobs.repeats} interleaved repeats, rotating order. Rates: median (min..max). Ratio: store ÷ raw, paired per repeat. CPU: this Node process plus the Postgres server processes (from /proc/<pid>/stat), µs per event. Two diagnostic loops run interleaved with them: the raw INSERT into a table that also has the log's unique \`position\` and \`(tx_id, position)\` indexes, and the raw INSERT with one \`pg_notify\` on the store's channel in the same statement (the store notifies once per append).`,
      '',
      markdownTable(
        [
          'c',
          'appends per cell',
          'store events/s',
          'raw pg events/s',
          'store ÷ raw',
          'store p50 / p99 ms',
          'raw p50 / p99 ms',
          'node + pg CPU µs/event: store / raw',
          'raw + store’s indexes: events/s (store ÷ it)',
          'raw + pg_notify: events/s (store ÷ it)',
          `goal ≥ ${goalRatio}×`,
        ],
        rows,
        [
          'right',
          'right',
          'right',
          'right',
          'right',
          'right',
          'right',
          'right',
          'right',
          'right',
          'left',
        ],
      ),
      '',
      `![P1 append throughput](${context.chart(
        'bench-p1-append.svg',
        lineChart({
          title: 'P1: Postgres append, one event per call',
          xTitle: 'concurrent writers (c)',
          yTitle: 'events/s (median)',
          xLabels: concurrencies.map(String),
          series: [
            { name: 'PostgresEventStore', values: series.store },
            { name: 'raw pg INSERT', values: series.raw },
            { name: 'raw + store’s indexes', values: series['raw-indexed'] },
            { name: 'raw + pg_notify', values: series['raw-notify'] },
          ],
        }),
      )})`,
      '',
    );
  }
  if (!knobs.backends.includes('sqlite')) {
    skipped.push('sqlite: not in LOOM_BENCH_BACKENDS');
  } else {
    const { variants, events, cells } = await sqliteAppends(context);
    json.push({ backend: 'sqlite', cells });
    const rows = variants.map((variant) => {
      const of = cells.filter((cell) => cell.variant === variant);
      const rate = summarize(of.map((cell) => cell.result.eventsPerSec));
      const [kind, synchronous] = variant.split(' ') as ['store' | 'raw', 'FULL' | 'NORMAL'];
      const ratio =
        kind === 'store'
          ? formatSummary(
              summarize(pairedRatios(cells, variant, `raw ${synchronous}` as SqliteVariant)),
              formatRatio,
            )
          : '';
      return [
        kind === 'store' ? 'SqliteEventStore.append' : 'raw better-sqlite3',
        synchronous,
        formatCount(events),
        formatSummary(rate, formatCount),
        `${formatMs(median(of.map((cell) => cell.result.latencyMs.p50)))} / ${formatMs(median(of.map((cell) => cell.result.latencyMs.p99)))}`,
        ratio,
      ];
    });
    lines.push(
      `SQLite floor: WAL, one transaction per event (\`BEGIN IMMEDIATE\`, INSERT, COMMIT), one writer (better-sqlite3 is synchronous: concurrency adds nothing), same columns and unique index as the log; ${knobs.repeats} interleaved repeats.`,
      '',
      markdownTable(
        ['writer', 'synchronous', 'appends per cell', 'events/s', 'p50 / p99 ms', 'store ÷ raw'],
        rows,
        ['left', 'left', 'right', 'right', 'right', 'right'],
      ),
      '',
    );
  }
  for (const line of skipped) lines.push(`- ${line}`);
  return { id: 'p1', title: 'raw append', markdown: lines.join('\n'), cells: json, skipped };
}
