/**
 * `bench:agents:threads`: would agent runs spread over worker threads pay (issue 28, item 4)?
 * The P18 cell (stub model without latency, 2 model calls and 1 read-only tool call per run),
 * `LOOM_BENCH_EXECS` runs (default 5,000) with `LOOM_BENCH_IN_FLIGHT` in flight (default 256), run
 * by 1 thread and by `LOOM_BENCH_THREADS` worker threads (default 2) in one process: each worker
 * its own runtime and store (memory, or a SQLite FULL file of its own: one writer per store, the
 * executions partitioned by thread), the runs and the in-flight count split evenly. The variants
 * alternate order per repeat (`LOOM_BENCH_REPEATS`, default 5); wall runs/s and the process's CPU
 * per run (`process.cpuUsage`, every thread) are reported as median (min..max).
 *
 * Then what one writer shared by executor threads would pay per append: the round trip of a
 * message of `LOOM_BENCH_MESSAGE_BYTES` (default 1,024, about an agent turn's batch) to a worker
 * that answers it, 20,000 times, in µs of wall and CPU per round trip.
 *
 *   LOOM_BENCH_BACKENDS=memory,sqlite pnpm --filter @loom/bench-throughput bench:agents:threads
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { type AgentStore, runFanoutCell } from './agent-cell.js';
import { rotatingOrder } from './interleave.js';
import type { Backend } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { backendsKnob, formatNumber, intKnob } from './script-knobs.js';
import { summarize } from './stats.js';

/** What a worker thread is asked to do. */
type Job =
  | { kind: 'cell'; backend: Backend; directory: string; name: string; runs: number; inFlight: number }
  | { kind: 'echo' };

function storeOf(backend: Backend, directory: string, name: string): AgentStore {
  if (backend === 'memory') return { kind: 'memory' };
  if (backend === 'sqlite') return { kind: 'sqlite', directory, name };
  throw new Error(`bench:agents:threads measures memory and sqlite, not ${backend}`);
}

async function workerMain(job: Job): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('a worker of bench:agents:threads has no parent port');
  if (job.kind === 'echo') {
    port.on('message', (message: Uint8Array | 'stop') => {
      if (message === 'stop') port.close();
      else port.postMessage(message.byteLength);
    });
    return;
  }
  // Wait for the go, so every thread's cell starts together (its runtime already open).
  await new Promise<void>((resolve) => port.once('message', () => resolve()));
  const result = await runFanoutCell(storeOf(job.backend, job.directory, job.name), {
    runs: job.runs,
    inFlight: job.inFlight,
    latencyMs: 0,
  });
  port.postMessage({ runs: result.runs, completed: result.completed });
}

interface Measured {
  runsPerSec: number;
  cpuUsPerRun: number;
}

/** All `runs` on this thread. */
async function oneThread(backend: Backend, directory: string, name: string, runs: number, inFlight: number): Promise<Measured> {
  const cpuBefore = process.cpuUsage();
  const startMs = performance.now();
  const result = await runFanoutCell(storeOf(backend, directory, name), { runs, inFlight, latencyMs: 0 });
  const wallMs = performance.now() - startMs;
  const cpu = process.cpuUsage(cpuBefore);
  if (result.completed !== runs) throw new Error(`${result.completed} of ${runs} runs completed`);
  return { runsPerSec: runs / (wallMs / 1000), cpuUsPerRun: (cpu.user + cpu.system) / runs };
}

/** `runs` split over `threads` worker threads, each its own runtime and store. */
async function workerThreads(
  backend: Backend,
  directory: string,
  name: string,
  runs: number,
  inFlight: number,
  threads: number,
): Promise<Measured> {
  const workers = Array.from({ length: threads }, (_, index) => {
    const job: Job = {
      kind: 'cell',
      backend,
      directory,
      name: `${name}-t${index}`,
      runs: Math.floor(runs / threads) + (index < runs % threads ? 1 : 0),
      inFlight: Math.max(1, Math.floor(inFlight / threads)),
    };
    return new Worker(new URL(import.meta.url), { workerData: job });
  });
  try {
    // Every worker loaded (its first turn of I/O) before the clock starts: the spawn and the
    // module load are paid once per process, not per run.
    await Promise.all(workers.map((worker) => new Promise((resolve) => worker.once('online', resolve))));
    const done = workers.map(
      (worker) =>
        new Promise<{ runs: number; completed: number }>((resolve, reject) => {
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    );
    const cpuBefore = process.cpuUsage();
    const startMs = performance.now();
    for (const worker of workers) worker.postMessage('go');
    const results = await Promise.all(done);
    const wallMs = performance.now() - startMs;
    const cpu = process.cpuUsage(cpuBefore);
    const completed = results.reduce((sum, result) => sum + result.completed, 0);
    if (completed !== runs) throw new Error(`${completed} of ${runs} runs completed over ${threads} threads`);
    return { runsPerSec: runs / (wallMs / 1000), cpuUsPerRun: (cpu.user + cpu.system) / runs };
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

/** Round trips of a `bytes`-long message to a worker that answers it: µs of wall and CPU each. */
async function roundTrips(bytes: number, count: number): Promise<{ wallUs: number; cpuUs: number }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { kind: 'echo' } satisfies Job });
  await new Promise((resolve) => worker.once('online', resolve));
  const payload = new Uint8Array(bytes).fill(7);
  let answered = 0;
  const cpuBefore = process.cpuUsage();
  const startMs = performance.now();
  await new Promise<void>((resolve) => {
    worker.on('message', () => {
      answered++;
      if (answered === count) resolve();
      else worker.postMessage(payload);
    });
    worker.postMessage(payload);
  });
  const wallMs = performance.now() - startMs;
  const cpu = process.cpuUsage(cpuBefore);
  worker.postMessage('stop');
  await worker.terminate();
  return { wallUs: (wallMs * 1000) / count, cpuUs: (cpu.user + cpu.system) / count };
}

async function main(): Promise<void> {
  const runs = intKnob('LOOM_BENCH_EXECS', 5_000);
  const inFlight = intKnob('LOOM_BENCH_IN_FLIGHT', 256);
  const threads = intKnob('LOOM_BENCH_THREADS', 2);
  const repeats = intKnob('LOOM_BENCH_REPEATS', 5);
  const messageBytes = intKnob('LOOM_BENCH_MESSAGE_BYTES', 1_024);
  const backends = backendsKnob();
  const directory = mkdtempSync(join(tmpdir(), 'loom-bench-threads-'));
  const variants = ['1 thread', `${threads} worker threads`] as const;
  const rows: string[][] = [];
  try {
    for (const backend of backends) {
      const seen = new Map<string, Measured[]>(variants.map((variant) => [variant, []]));
      // A warm-up of each variant, not counted.
      await oneThread(backend, directory, 'warm-1', Math.min(runs, 500), inFlight);
      await workerThreads(backend, directory, 'warm-n', Math.min(runs, 500), inFlight, threads);
      for (let repeat = 0; repeat < repeats; repeat++) {
        for (const variant of rotatingOrder(variants, repeat)) {
          const name = `${backend}-${repeat}-${variant === '1 thread' ? 'one' : 'many'}`;
          const measured =
            variant === '1 thread'
              ? await oneThread(backend, directory, name, runs, inFlight)
              : await workerThreads(backend, directory, name, runs, inFlight, threads);
          seen.get(variant)?.push(measured);
          console.error(
            `${backend} ${variant} repeat ${repeat + 1}/${repeats}: ${formatNumber(measured.runsPerSec, 0)} runs/s, ${formatNumber(measured.cpuUsPerRun, 0)} µs CPU/run`,
          );
        }
      }
      for (const variant of variants) {
        const cells = seen.get(variant) ?? [];
        const rate = summarize(cells.map((cell) => cell.runsPerSec));
        const cpu = summarize(cells.map((cell) => cell.cpuUsPerRun));
        rows.push([
          backend === 'sqlite' ? 'sqlite FULL' : backend,
          variant,
          `${formatNumber(rate.median, 0)} (${formatNumber(rate.min, 0)}..${formatNumber(rate.max, 0)})`,
          `${formatNumber(cpu.median, 0)} (${formatNumber(cpu.min, 0)}..${formatNumber(cpu.max, 0)})`,
        ]);
      }
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log(
    `\n${runs} runs, ${inFlight} in flight (split evenly over the threads), ${repeats} repeats, median (min..max)\n`,
  );
  console.log(
    markdownTable(['backend', 'variant', 'runs/s', 'CPU µs per run (all threads)'], rows, [
      'left',
      'left',
      'right',
      'right',
    ]),
  );
  const trips = [];
  for (let repeat = 0; repeat < repeats; repeat++) trips.push(await roundTrips(messageBytes, 20_000));
  const wall = summarize(trips.map((trip) => trip.wallUs));
  const cpu = summarize(trips.map((trip) => trip.cpuUs));
  console.log(
    `\nA ${formatNumber(messageBytes, 0)}-byte message to a worker thread and its answer: ${formatNumber(wall.median, 1)} µs wall (${formatNumber(wall.min, 1)}..${formatNumber(wall.max, 1)}), ${formatNumber(cpu.median, 1)} µs CPU (${formatNumber(cpu.min, 1)}..${formatNumber(cpu.max, 1)}) per round trip, 20,000 trips × ${repeats}`,
  );
}

if (isMainThread) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
} else {
  workerMain(workerData as Job).catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
