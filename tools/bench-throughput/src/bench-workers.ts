/**
 * `pnpm --filter @loom/bench-throughput bench:workers`: throughput of 1, 2 and 4 `loom worker`
 * processes (the built binary of @loom/view) on one Postgres, draining one queue of three-step
 * executions. Each run gets a fresh schema with `--execs` items enqueued before the workers start;
 * exec/s counts the items finished between the moment every worker printed `ready` and the moment
 * 90 % were done (no boot, no tail). Per-worker CPU comes from /proc/<pid>/stat, the machine's from
 * /proc/stat, over the same window. Variants run interleaved (1 2 4, 2 4 1, 4 1 2), medians of
 * `--repeats` are printed as a Markdown table.
 *
 * Flags: --execs 1500, --repeats 3, --concurrency 50 (queue items per worker at once).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createRuntime, type WorkflowDefinition } from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';
import pg from 'pg';
import { interleavedSchedule } from './interleave.js';
import { describeMachine, machineMarkdown } from './machine.js';
import { busyShareBetween, msPerJiffy, readCpuJiffies } from './proc-stat.js';
import { median } from './stats.js';

const { values } = parseArgs({
  options: {
    execs: { type: 'string', default: '1500' },
    repeats: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '50' },
    workers: { type: 'string', default: '1,2,4' },
  },
});
const execs = Number(values.execs);
const pgUrl = process.env.LOOM_BENCH_PG ?? 'postgres://root@127.0.0.1:5432/test';
const bin = fileURLToPath(new URL('../../../packages/view/dist/bin.js', import.meta.url));
const flowsModule = fileURLToPath(new URL('./worker-flows.mjs', import.meta.url));
const queue = 'bench';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** utime + stime of a process, in ms of one core. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * msPerJiffy;
}

/** utime + stime of every `postgres` process on this machine (server and backends), in ms. */
function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      total += processCpuMs(Number(entry));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

interface Sample {
  workers: number;
  execPerSec: number;
  /** Mean CPU of one worker process, in % of one core. */
  workerCpuPct: number;
  /** CPU of all `postgres` processes, in % of one core. */
  postgresCpuPct: number;
  /** Share of all cores busy (every process: workers, Postgres, this script, the neighbours). */
  machineBusyPct: number;
}

async function runOnce(workers: number, repeat: number): Promise<Sample> {
  const schema = `bench_workers_${process.pid}_${workers}_${repeat}`;
  const { job } = (await import(flowsModule)) as { job: WorkflowDefinition<{ n: number }, number> };
  const admin = new pg.Pool({ connectionString: pgUrl, max: 2 });
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const backend = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
  const seed = createRuntime({ backend, flows: [job], timerPollMs: 0, recoverEveryMs: 0 });
  for (let start = 0; start < execs; start += 100) {
    const batch = [];
    for (let n = start; n < Math.min(execs, start + 100); n++) {
      batch.push(seed.enqueue(queue, job, { n }, { itemId: `b${n}` }));
    }
    await Promise.all(batch);
  }
  await seed.shutdown();
  const done = async () =>
    (
      await admin.query(
        `SELECT count(*)::int AS n FROM ${schema}.queue_items WHERE queue = $1 AND status = 'done'`,
        [queue],
      )
    ).rows[0].n as number;

  const children: ChildProcess[] = [];
  const ready: Promise<void>[] = [];
  for (let index = 0; index < workers; index++) {
    const child = spawn(
      process.execPath,
      [
        bin,
        'worker',
        '--db',
        `${pgUrl}?schema=${schema}`,
        '--flows',
        flowsModule,
        '--queues',
        queue,
        '--concurrency',
        String(values.concurrency),
        '--poll',
        '100',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(child);
    ready.push(
      new Promise((resolve, reject) => {
        let out = '';
        child.stdout?.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes(' ready:')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`worker exited ${code} before ready`)));
      }),
    );
  }
  try {
    await Promise.all(ready);
    const t0 = Date.now();
    const done0 = await done();
    const cpu0 = children.map((child) => processCpuMs(child.pid as number));
    const machine0 = readCpuJiffies();
    const postgres0 = postgresCpuMs();
    const target = Math.ceil(execs * 0.9);
    let done1 = done0;
    for (const deadline = Date.now() + 600_000; done1 < target; done1 = await done()) {
      if (Date.now() > deadline) throw new Error(`${workers} workers: not 90 % done in 600 s`);
      await pause(50);
    }
    const seconds = (Date.now() - t0) / 1000;
    const cpu1 = children.map((child) => processCpuMs(child.pid as number));
    const machine1 = readCpuJiffies();
    const postgres1 = postgresCpuMs();
    const workerCpu = cpu1.map((ms, index) => ms - (cpu0[index] as number));
    return {
      workers,
      execPerSec: (done1 - done0) / seconds,
      workerCpuPct: (workerCpu.reduce((a, b) => a + b, 0) / workers / (seconds * 1000)) * 100,
      postgresCpuPct: ((postgres1 - postgres0) / (seconds * 1000)) * 100,
      machineBusyPct:
        machine0 === undefined || machine1 === undefined
          ? Number.NaN
          : busyShareBetween(machine0, machine1) * 100,
    };
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(
      children.map((child) =>
        child.exitCode !== null ? undefined : new Promise((resolve) => child.on('exit', resolve)),
      ),
    );
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

const variants = String(values.workers).split(',').map(Number);
const date = new Date().toISOString();
const loadBefore = loadavg().map((n) => n.toFixed(2));
const samples: Sample[] = [];
for (const { repeat, variant } of interleavedSchedule(variants, Number(values.repeats))) {
  const sample = await runOnce(variant, repeat);
  samples.push(sample);
  console.error(
    `repeat ${repeat}: ${variant} worker(s) ${sample.execPerSec.toFixed(0)} exec/s, ` +
      `${sample.workerCpuPct.toFixed(0)} % CPU per worker, Postgres ${sample.postgresCpuPct.toFixed(0)} %, machine ${sample.machineBusyPct.toFixed(0)} % busy`,
  );
}
const version = await (async () => {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  const { rows } = await client.query('SHOW server_version');
  await client.end();
  return `PostgreSQL ${rows[0].server_version as string}`;
})();
const base = median(samples.filter((s) => s.workers === variants[0]).map((s) => s.execPerSec));
console.log(`\n${machineMarkdown(describeMachine(version, null), date)}`);
console.log(
  `- Load average (1, 5, 15 min) at start: ${loadBefore.join(' ')}; at end: ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
);
console.log(
  `- ${execs} three-step executions per run on one queue, --concurrency ${values.concurrency} per worker, medians of ${values.repeats} interleaved repeats\n`,
);
console.log(
  '| workers | exec/s (median) | vs 1 worker | CPU per worker (% of one core) | Postgres CPU (% of one core) | machine busy (% of both cores) |',
);
console.log('|---:|---:|---:|---:|---:|---:|');
for (const workers of variants) {
  const mine = samples.filter((s) => s.workers === workers);
  const rate = median(mine.map((s) => s.execPerSec));
  console.log(
    `| ${workers} | ${rate.toFixed(0)} | ${(rate / base).toFixed(2)}× | ${median(mine.map((s) => s.workerCpuPct)).toFixed(0)} | ${median(mine.map((s) => s.postgresCpuPct)).toFixed(0)} | ${median(mine.map((s) => s.machineBusyPct)).toFixed(0)} |`,
  );
}
