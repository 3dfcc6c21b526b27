/**
 * Issue 31, item 1: what a debounced enqueue costs, and how many runs a steady stream leaves, on
 * SQLite and Postgres.
 *
 *   pnpm --filter @loom/event-runtime bench:debounce
 *
 * Per backend, on a fresh queue: enqueues paced at `LOOM_BENCH_RATE` per second (default 1,000)
 * for `LOOM_BENCH_SECONDS` (default 10), item i debounced under key `k-<i mod LOOM_BENCH_KEYS>`
 * (default 100 keys) with `periodMs` 200 and `maxWaitMs` 1,000 — each key is enqueued every
 * ~100 ms, more often than its period, so without the cap it would never run; with it each key
 * runs about once a second. Beside them, in the same process, a worker loop claims up to 100
 * items every 20 ms and completes them at once. Prints per backend: enqueues sent, the median
 * and p99 enqueue latency (call to answer), items written (runs started) vs. collapsed,
 * runs claimed, and process CPU per enqueue; and the same pace without `debounce` (plain items,
 * every one a run) as the baseline (user + system of this process over the run, the
 * worker loop included; Postgres' own CPU is not in it). Absolute times are printed, never
 * asserted. SQLite runs with `synchronous=NORMAL` unless `LOOM_BENCH_SQLITE_SYNC=FULL`. Postgres
 * is `LOOM_TEST_PG_URL` (default the local test database), in a throwaway schema; a backend it
 * cannot reach is skipped with a line saying so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { QueueStore } from '../src/index.js';
import { openPostgres } from '../src/postgres.js';
import { openSqlite } from '../src/sqlite.js';

const RATE = Number(process.env.LOOM_BENCH_RATE ?? 1_000);
const SECONDS = Number(process.env.LOOM_BENCH_SECONDS ?? 10);
const KEYS = Number(process.env.LOOM_BENCH_KEYS ?? 100);
const PERIOD_MS = 200;
const MAX_WAIT_MS = 1_000;
const TICK_MS = 10;
const CLAIM_EVERY_MS = 20;
const SQLITE_SYNC = process.env.LOOM_BENCH_SQLITE_SYNC === 'FULL' ? 'FULL' : 'NORMAL';
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;

async function bench(name: string, queues: QueueStore, debounced: boolean): Promise<string> {
  const queue = `bench-${debounced ? 'debounce' : 'plain'}-${process.pid}`;
  const total = RATE * SECONDS;
  const latenciesMs: number[] = [];
  let written = 0;
  let claimed = 0;
  let producing = true;
  const worker = (async () => {
    while (producing) {
      const items = await queues.claim(queue, { owner: 'bench', limit: 100, claimTtlMs: 60_000 });
      claimed += items.length;
      if (items.length > 0) {
        await queues.complete(
          queue,
          items.map((item) => item.itemId),
        );
      }
      await sleep(CLAIM_EVERY_MS);
    }
  })();
  const cpuBefore = process.cpuUsage();
  const startedAt = performance.now();
  const pending: Promise<void>[] = [];
  for (let sent = 0; sent < total; ) {
    // Paced: everything due by now is sent, then wait for the next tick.
    const due = Math.min(total, Math.floor(((performance.now() - startedAt) / 1_000) * RATE));
    for (; sent < due; sent++) {
      const n = sent;
      const callAt = performance.now();
      pending.push(
        queues
          .enqueue({
            queue,
            flow: 'job',
            input: { n },
            ...(debounced
              ? { debounce: { key: `k-${n % KEYS}`, periodMs: PERIOD_MS, maxWaitMs: MAX_WAIT_MS } }
              : {}),
          })
          .then((result) => {
            latenciesMs.push(performance.now() - callAt);
            if (!result.duplicate) written += 1;
          }),
      );
    }
    await sleep(TICK_MS);
  }
  await Promise.all(pending);
  const elapsedS = (performance.now() - startedAt) / 1_000;
  const cpu = process.cpuUsage(cpuBefore);
  // Let the last keys fall due and be claimed, then stop the worker.
  await sleep(MAX_WAIT_MS + 200);
  producing = false;
  await worker;
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const cpuUsPerEnqueue = (cpu.user + cpu.system) / total;
  return (
    `| ${name} | ${debounced ? 'debounced' : 'plain'} | ${total} in ${elapsedS.toFixed(1)} s | ${quantile(sorted, 0.5).toFixed(2)} | ` +
    `${quantile(sorted, 0.99).toFixed(2)} | ${written} | ${total - written} | ${claimed} | ` +
    `${cpuUsPerEnqueue.toFixed(0)} |`
  );
}

const lines = [
  `queue debounce, ${RATE}/s for ${SECONDS} s over ${KEYS} keys (period ${PERIOD_MS} ms, ` +
    `maxWait ${MAX_WAIT_MS} ms), SQLite synchronous=${SQLITE_SYNC}, ` +
    `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${new Date().toISOString()}`,
  '',
  '| backend | enqueue | enqueues | latency median (ms) | p99 (ms) | runs started (items written) | collapsed | runs claimed | CPU µs per enqueue |',
  '|---|---|---|---|---|---|---|---|---|',
];

const directory = mkdtempSync(join(tmpdir(), 'loom-bench-debounce-'));
try {
  const sqlite = openSqlite({
    path: join(directory, 'debounce.db'),
    migrate: true,
    synchronous: SQLITE_SYNC,
  });
  lines.push(await bench('sqlite', sqlite.queues, false));
  lines.push(await bench('sqlite', sqlite.queues, true));
  await sqlite.close();
} finally {
  rmSync(directory, { recursive: true, force: true });
}

const schema = `loom_bench_debounce_${process.pid}`;
let postgres: Awaited<ReturnType<typeof openPostgres>> | undefined;
try {
  postgres = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
} catch (error) {
  lines.push(`| postgres | skipped: ${String(error)} | | | | | | | |`);
}
if (postgres !== undefined) {
  try {
    lines.push(await bench('postgres', postgres.queues, false));
    lines.push(await bench('postgres', postgres.queues, true));
  } finally {
    await postgres.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await postgres.close();
  }
}
console.log(lines.join('\n'));
