/**
 * P10 and P1 for ADR 0028: writer throughput of `PostgresEventStore.append` with 0, 2 and 4
 * real listening processes (each LISTENs to every NOTIFY channel of the schema), beside a raw
 * `pg` INSERT loop at the same concurrency and pool size. With `LOOM_BENCH_BASELINE` set to a
 * built copy of an older `@loom/event-runtime` `dist/` (e.g. from before ADR 0028, when every
 * append called pg_notify inside its transaction), that store runs interleaved too, so before
 * and after are measured side by side in one run.
 *
 * Knobs: LOOM_BENCH_PG_URL, LOOM_BENCH_CONCS (default 32), LOOM_BENCH_NOTIFY_EVENTS (appends per
 * cell, default 2000), LOOM_BENCH_REPEATS (default 3), LOOM_BENCH_LISTENERS (default 0,2,4),
 * LOOM_BENCH_BASELINE (a dist/ directory; optional).
 *
 * Usage: pnpm --filter @loom/bench-throughput bench:notify
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { EventStore } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import pg from 'pg';
import {
  type AppendMeasurement,
  type AppendOnce,
  createRawTables,
  measureAppends,
  rawPgAppender,
  storeAppender,
} from './append-suite.js';
import { dropPostgres, pgPoolSize, reachPostgres } from './bench-backend.js';
import { formatCount, formatRatio } from './format-number.js';
import { rotatingOrder } from './interleave.js';
import { roundToConcurrency } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { busyShareBetween, readCpuJiffies } from './proc-stat.js';
import { median } from './stats.js';

const url = process.env.LOOM_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/test';
const list = (value: string | undefined, fallback: number[]) =>
  value ? value.split(',').map((item) => Number(item.trim())) : fallback;
const concurrencies = list(process.env.LOOM_BENCH_CONCS, [32]);
const listenerCounts = list(process.env.LOOM_BENCH_LISTENERS, [0, 2, 4]);
const eventsPerCell = Number(process.env.LOOM_BENCH_NOTIFY_EVENTS || 2000);
const repeats = Number(process.env.LOOM_BENCH_REPEATS || 3);
const baselineDir = process.env.LOOM_BENCH_BASELINE;
const notifyBuckets = 16;
/** Longest a listening process may take to say `ready` or answer `count`. */
const childDeadlineMs = 30_000;

interface Listener {
  child: ChildProcessWithoutNullStreams;
  lines: Interface;
}

function nextLine(listener: Listener): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('a listening process did not answer')),
      childDeadlineMs,
    );
    listener.lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
  });
}

async function spawnListener(schema: string): Promise<Listener> {
  const script = fileURLToPath(new URL('./notify-listener-child.ts', import.meta.url));
  const child = spawn(process.execPath, [
    '--import',
    'tsx',
    script,
    url,
    schema,
    `${notifyBuckets}`,
  ]);
  child.stderr.on('data', (chunk) => process.stderr.write(chunk));
  const listener = { child, lines: createInterface({ input: child.stdout }) };
  const line = await nextLine(listener);
  if (line !== 'ready') throw new Error(`listening process said ${line}`);
  return listener;
}

async function heard(listener: Listener): Promise<number> {
  const answer = nextLine(listener);
  listener.child.stdin.write('count\n');
  return Number(await answer);
}

async function stopListener(listener: Listener): Promise<void> {
  const exited = new Promise((resolve) => listener.child.once('exit', resolve));
  listener.child.stdin.end();
  await exited;
}

type Variant = 'store' | 'store-before' | 'raw';

interface Cell {
  variant: Variant;
  concurrency: number;
  listeners: number;
  repeat: number;
  result: AppendMeasurement;
  heardPerListener: number;
}

async function main(): Promise<void> {
  const target = await reachPostgres(url);
  if (typeof target === 'string') {
    console.log(`bench:notify skipped: Postgres at ${url} is not reachable (${target})`);
    return;
  }
  const before = readCpuJiffies();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const after = readCpuJiffies();
  const busy = before && after ? busyShareBetween(before, after) : Number.NaN;
  console.log(
    `bench:notify ${new Date().toISOString()}, machine ${Math.round(busy * 100)} % busy in the second before`,
  );
  const pools: pg.Pool[] = [];
  const pool = () => {
    const created = new pg.Pool({ connectionString: url, max: pgPoolSize });
    created.on('error', () => {});
    pools.push(created);
    return created;
  };
  const stores: EventStore[] = [];
  try {
    await createRawTables(target);
    const store = await PostgresEventStore.open({ pool: pool(), schema: target.schema });
    await store.migrate();
    stores.push(store);
    const appenders: Partial<Record<Variant, AppendOnce>> = {
      store: storeAppender(store),
      raw: rawPgAppender(pool(), `${target.schema}.raw_plain`, 'bench-raw-plain'),
    };
    if (baselineDir) {
      const module = (await import(`${baselineDir}/store/postgres/postgres-event-store.js`)) as {
        PostgresEventStore: typeof PostgresEventStore;
      };
      const old = await module.PostgresEventStore.open({ pool: pool(), schema: target.schema });
      stores.push(old);
      appenders['store-before'] = storeAppender(old);
    }
    const variants = Object.keys(appenders) as Variant[];
    for (const variant of variants) {
      await measureAppends(appenders[variant] as AppendOnce, `warm-${variant}`, 16, 800, () => {});
    }
    const cells: Cell[] = [];
    for (const concurrency of concurrencies) {
      const events = roundToConcurrency(eventsPerCell, concurrency);
      for (let repeat = 0; repeat < repeats; repeat++) {
        for (const listeners of rotatingOrder(listenerCounts, repeat)) {
          const children = await Promise.all(
            Array.from({ length: listeners }, () => spawnListener(target.schema)),
          );
          try {
            for (const variant of rotatingOrder(variants, repeat)) {
              const heardBefore = await Promise.all(children.map(heard));
              process.stderr.write(
                `c=${concurrency} listeners=${listeners} ${variant} repeat ${repeat + 1}/${repeats}\n`,
              );
              const result = await measureAppends(
                appenders[variant] as AppendOnce,
                `p10-${variant}-c${concurrency}-l${listeners}-r${repeat}`,
                concurrency,
                events,
                () => {},
                true,
              );
              // Let the notifications of the cell arrive, then count them per listener.
              await new Promise((resolve) => setTimeout(resolve, 300));
              const heardAfter = await Promise.all(children.map(heard));
              const perListener = heardAfter.map(
                (count, index) => count - (heardBefore[index] ?? 0),
              );
              cells.push({
                variant,
                concurrency,
                listeners,
                repeat,
                result,
                heardPerListener: perListener.length === 0 ? 0 : median(perListener),
              });
            }
          } finally {
            await Promise.all(children.map(stopListener));
          }
        }
      }
    }
    report(cells, variants);
    if (stores[0] instanceof PostgresEventStore) {
      const stats = stores[0].stats;
      console.log(
        `\nThe store sent ${formatCount(stats.notifyStatements)} notify statements ` +
          `(${stats.notifyFailures} failed) for all its appends in the run.`,
      );
    }
  } finally {
    for (const store of stores) await store.close();
    for (const created of pools) await created.end();
    await dropPostgres(target);
  }
}

function report(cells: Cell[], variants: Variant[]): void {
  const rows: string[][] = [];
  for (const concurrency of concurrencies) {
    for (const variant of variants) {
      for (const listeners of listenerCounts) {
        const mine = cells.filter(
          (cell) =>
            cell.variant === variant &&
            cell.concurrency === concurrency &&
            cell.listeners === listeners,
        );
        const rates = mine.map((cell) => cell.result.eventsPerSec);
        const paired = (other: (cell: Cell) => Cell | undefined) =>
          mine
            .map((cell) => {
              const base = other(cell);
              return base === undefined
                ? undefined
                : cell.result.eventsPerSec / base.result.eventsPerSec;
            })
            .filter((ratio): ratio is number => ratio !== undefined);
        const vsZero = paired((cell) =>
          cells.find(
            (base) =>
              base.variant === variant &&
              base.concurrency === concurrency &&
              base.listeners === 0 &&
              base.repeat === cell.repeat,
          ),
        );
        const vsRaw = paired((cell) =>
          cells.find(
            (base) =>
              base.variant === 'raw' &&
              base.concurrency === concurrency &&
              base.listeners === cell.listeners &&
              base.repeat === cell.repeat,
          ),
        );
        const ratioText = (ratios: number[]) =>
          ratios.length === 0
            ? ''
            : `${formatRatio(median(ratios))} (${formatRatio(Math.min(...ratios))}..${formatRatio(Math.max(...ratios))})`;
        rows.push([
          `${concurrency}`,
          variant,
          `${listeners}`,
          `${formatCount(median(rates))} (${formatCount(Math.min(...rates))}..${formatCount(Math.max(...rates))})`,
          listenerCounts.includes(0) ? ratioText(vsZero) : '',
          variant === 'raw' ? '' : ratioText(vsRaw),
          `${formatCount(median(mine.map((cell) => cell.result.clientAndDbCpuUsPerEvent ?? Number.NaN)))}`,
          `${formatCount(median(mine.map((cell) => cell.result.processCpuUsPerEvent)))} / ${formatCount(median(mine.map((cell) => (cell.result.clientAndDbCpuUsPerEvent ?? Number.NaN) - cell.result.processCpuUsPerEvent)))}`,
          `${formatCount(median(mine.map((cell) => cell.heardPerListener)))}`,
        ]);
      }
    }
  }
  console.log(
    markdownTable(
      [
        'c',
        'writer',
        'listening processes',
        'events/s median (min..max)',
        '÷ same writer, 0 listeners',
        '÷ raw INSERT, same listeners',
        'node + pg CPU µs/event',
        'of it node / pg',
        'notifications heard per listener per cell',
      ],
      rows,
      ['right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
  );
}

await main();
