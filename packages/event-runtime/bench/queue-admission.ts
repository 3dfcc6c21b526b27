/**
 * Issue 31, item 5: what per-key admission (an item's own `partitionConcurrencyMax`, ADR 0059)
 * costs per start against the plain queue, at 10,000 keys, on SQLite and Postgres.
 *
 *   pnpm --filter @loom/event-runtime bench:admission
 *
 * Each repeat runs both variants on a fresh queue, interleaved (plain then keyed, then keyed then
 * plain, …): enqueue N items (`LOOM_BENCH_ITEMS`, default 10,000; keyed: item i under key
 * `k-<i mod LOOM_BENCH_KEYS>`, default 10,000 keys, limit 1), then drain them the way a worker
 * does: claims of 100 while fewer than 500 are in flight, completing the oldest batch when full.
 * A start is its enqueue, its share of a claim and its complete. Prints per backend the median
 * µs per start (enqueue, claim + complete, total) and the keyed ÷ plain ratios with min..max
 * over `LOOM_BENCH_REPEATS` (default 5). SQLite runs with `synchronous=NORMAL` unless
 * `LOOM_BENCH_SQLITE_SYNC=FULL` (an fsync per enqueue hides what admission costs). Absolute times are printed, never asserted. Postgres is
 * `LOOM_TEST_PG_URL` (default the local test database), in a throwaway schema; a backend it
 * cannot reach is skipped with a line saying so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { QueueStore } from '../src/index.js';
import { openPostgres } from '../src/postgres.js';
import { openSqlite } from '../src/sqlite.js';

const ITEMS = Number(process.env.LOOM_BENCH_ITEMS ?? 10_000);
const KEYS = Number(process.env.LOOM_BENCH_KEYS ?? 10_000);
const REPEATS = Number(process.env.LOOM_BENCH_REPEATS ?? 5);
/** NORMAL by default: the fsync per enqueue would drown the admission cost this measures. */
const SQLITE_SYNC = process.env.LOOM_BENCH_SQLITE_SYNC === 'FULL' ? 'FULL' : 'NORMAL';
const BATCH = 100;
const IN_FLIGHT_MAX = 500;
/** Enqueues in flight at once on Postgres (a pool); SQLite's are synchronous anyway. */
const ENQUEUE_CONCURRENCY = 16;
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

type Variant = 'plain' | 'keyed';
interface Run {
  enqueueUs: number;
  drainUs: number;
}

async function runOnce(queues: QueueStore, queue: string, variant: Variant): Promise<Run> {
  const started = performance.now();
  for (let next = 0; next < ITEMS; ) {
    const wave: Promise<unknown>[] = [];
    for (let lane = 0; lane < ENQUEUE_CONCURRENCY && next < ITEMS; lane++, next++) {
      wave.push(
        queues.enqueue({
          queue,
          itemId: `i-${next}`,
          flow: 'job',
          input: { n: next },
          ...(variant === 'keyed'
            ? { partitionKey: `k-${next % KEYS}`, partitionConcurrencyMax: 1 }
            : {}),
        }),
      );
    }
    await Promise.all(wave);
  }
  const enqueued = performance.now();
  const inFlight: string[][] = [];
  let running = 0;
  let done = 0;
  while (done < ITEMS) {
    const claimed =
      running < IN_FLIGHT_MAX
        ? await queues.claim(queue, { owner: 'bench', limit: BATCH, claimTtlMs: 600_000 })
        : [];
    if (claimed.length > 0) {
      inFlight.push(claimed.map((item) => item.itemId));
      running += claimed.length;
      continue;
    }
    const oldest = inFlight.shift();
    if (oldest === undefined) throw new Error(`nothing claimable with ${ITEMS - done} items left`);
    await queues.complete(queue, oldest);
    running -= oldest.length;
    done += oldest.length;
  }
  const drained = performance.now();
  return {
    enqueueUs: ((enqueued - started) * 1_000) / ITEMS,
    drainUs: ((drained - enqueued) * 1_000) / ITEMS,
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const range = (values: number[]) =>
  `${Math.min(...values).toFixed(2)}..${Math.max(...values).toFixed(2)}`;

async function bench(name: string, queues: QueueStore): Promise<string[]> {
  const runs: Record<Variant, Run[]> = { plain: [], keyed: [] };
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    const order: Variant[] = repeat % 2 === 0 ? ['plain', 'keyed'] : ['keyed', 'plain'];
    for (const variant of order) {
      runs[variant].push(await runOnce(queues, `bench-${variant}-${repeat}`, variant));
    }
    process.stderr.write(`${name}: repeat ${repeat + 1}/${REPEATS}\n`);
  }
  const total = (run: Run) => run.enqueueUs + run.drainUs;
  const ratios = (pick: (run: Run) => number) =>
    runs.plain.map((plain, index) => pick(runs.keyed[index] as Run) / pick(plain));
  const row = (what: string, pick: (run: Run) => number) => {
    const r = ratios(pick);
    return `| ${name} | ${what} | ${median(runs.plain.map(pick)).toFixed(1)} | ${median(runs.keyed.map(pick)).toFixed(1)} | ${median(r).toFixed(2)}× (${range(r)}) |`;
  };
  return [
    row('enqueue', (run) => run.enqueueUs),
    row('claim + complete', (run) => run.drainUs),
    row('per start (all three)', total),
  ];
}

const lines = [
  `queue admission, ${ITEMS} items, keyed over ${KEYS} keys (limit 1), ${REPEATS} repeats, ` +
    `SQLite synchronous=${SQLITE_SYNC}, ` +
    `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${new Date().toISOString()}`,
  '',
  '| backend | µs per start | plain (median) | keyed (median) | keyed ÷ plain, median (min..max) |',
  '|---|---|---|---|---|',
];

const directory = mkdtempSync(join(tmpdir(), 'loom-bench-admission-'));
try {
  const sqlite = openSqlite({
    path: join(directory, 'admission.db'),
    migrate: true,
    synchronous: SQLITE_SYNC,
  });
  lines.push(...(await bench('sqlite', sqlite.queues)));
  await sqlite.close();
} finally {
  rmSync(directory, { recursive: true, force: true });
}

const schema = `loom_bench_admission_${process.pid}`;
let postgres: Awaited<ReturnType<typeof openPostgres>> | undefined;
try {
  postgres = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
} catch (error) {
  lines.push(`| postgres | skipped: ${String(error)} | | | |`);
}
if (postgres !== undefined) {
  try {
    lines.push(...(await bench('postgres', postgres.queues)));
  } finally {
    await postgres.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await postgres.close();
  }
}
console.log(lines.join('\n'));
