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

/** What a worker thread is: a cell runner (`cell`) or an echo of messages (`echo`). */
type Role = { kind: 'cell'; backend: Backend; directory: string } | { kind: 'echo' };

/** One cell for a cell runner: `runs` runs, `inFlight` at a time, on a store named `name`. */
interface CellJob {
  name: string;
  runs: number;
  inFlight: number;
}

function storeOf(backend: Backend, directory: string, name: string): AgentStore {
  if (backend === 'memory') return { kind: 'memory' };
  if (backend === 'sqlite') return { kind: 'sqlite', directory, name };
  throw new Error(`bench:agents:threads measures memory and sqlite, not ${backend}`);
}

/**
 * A worker on this file as `tsc -b` built it (`dist/`, which the script's `tsc -b` refreshes): Node
 * 20 does not carry the main thread's `--import tsx` hooks into a worker thread.
 */
function spawnWorker(role: Role): Worker {
  const built = import.meta.url.endsWith('.ts')
    ? new URL('../dist/bench-agents-threads.js', import.meta.url)
    : new URL(import.meta.url);
  return new Worker(built, { workerData: role, execArgv: [] });
}

function workerMain(role: Role): void {
  const port = parentPort;
  if (port === null) throw new Error('a worker of bench:agents:threads has no parent port');
  if (role.kind === 'echo') {
    port.on('message', (message: Uint8Array | 'stop') => {
      if (message === 'stop') port.close();
      else port.postMessage(message.byteLength);
    });
    return;
  }
  // One cell per message, for as long as the pool lives: the thread stays warm between cells.
  port.on('message', (job: CellJob | 'stop') => {
    if (job === 'stop') {
      port.close();
      return;
    }
    runFanoutCell(storeOf(role.backend, role.directory, job.name), {
      runs: job.runs,
      inFlight: job.inFlight,
      latencyMs: 0,
    }).then(
      (result) => port.postMessage({ completed: result.completed }),
      (error: unknown) => port.postMessage({ error: String(error) }),
    );
  });
}

interface Measured {
  runsPerSec: number;
  cpuUsPerRun: number;
}

/** All `runs` on this thread. */
async function oneThread(
  backend: Backend,
  directory: string,
  name: string,
  runs: number,
  inFlight: number,
): Promise<Measured> {
  const cpuBefore = process.cpuUsage();
  const startMs = performance.now();
  const result = await runFanoutCell(storeOf(backend, directory, name), {
    runs,
    inFlight,
    latencyMs: 0,
  });
  const wallMs = performance.now() - startMs;
  const cpu = process.cpuUsage(cpuBefore);
  if (result.completed !== runs) throw new Error(`${result.completed} of ${runs} runs completed`);
  return { runsPerSec: runs / (wallMs / 1000), cpuUsPerRun: (cpu.user + cpu.system) / runs };
}

/** `threads` worker threads kept for a backend's whole series, each its own runtime and store per cell. */
class ThreadPool {
  private readonly workers: Worker[];

  constructor(backend: Backend, directory: string, threads: number) {
    this.workers = Array.from({ length: threads }, () =>
      spawnWorker({ kind: 'cell', backend, directory }),
    );
  }

  /** `runs` split evenly over the threads (and `inFlight` too), all started together. */
  async run(name: string, runs: number, inFlight: number): Promise<Measured> {
    const threads = this.workers.length;
    const done = this.workers.map(
      (worker) =>
        new Promise<{ completed?: number; error?: string }>((resolve, reject) => {
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    );
    const cpuBefore = process.cpuUsage();
    const startMs = performance.now();
    for (const [index, worker] of this.workers.entries()) {
      const job: CellJob = {
        name: `${name}-t${index}`,
        runs: Math.floor(runs / threads) + (index < runs % threads ? 1 : 0),
        inFlight: Math.max(1, Math.floor(inFlight / threads)),
      };
      worker.postMessage(job);
    }
    const results = await Promise.all(done);
    const wallMs = performance.now() - startMs;
    const cpu = process.cpuUsage(cpuBefore);
    const failed = results.find((result) => result.error !== undefined);
    if (failed !== undefined) throw new Error(`a worker thread's cell failed: ${failed.error}`);
    const completed = results.reduce((sum, result) => sum + (result.completed ?? 0), 0);
    if (completed !== runs)
      throw new Error(`${completed} of ${runs} runs completed over ${threads} threads`);
    return { runsPerSec: runs / (wallMs / 1000), cpuUsPerRun: (cpu.user + cpu.system) / runs };
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}

/** Round trips of a `bytes`-long message to a worker that answers it: µs of wall and CPU each. */
async function roundTrips(
  bytes: number,
  count: number,
): Promise<{ wallUs: number; cpuUs: number }> {
  const worker = spawnWorker({ kind: 'echo' });
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
      const pool = new ThreadPool(backend, directory, threads);
      try {
        // A warm-up of each variant, not counted: the threads stay warm from here on.
        await oneThread(backend, directory, 'warm-1', runs, inFlight);
        await pool.run('warm-n', runs, inFlight);
        for (let repeat = 0; repeat < repeats; repeat++) {
          for (const variant of rotatingOrder(variants, repeat)) {
            const name = `${backend}-${repeat}-${variant === '1 thread' ? 'one' : 'many'}`;
            const measured =
              variant === '1 thread'
                ? await oneThread(backend, directory, name, runs, inFlight)
                : await pool.run(name, runs, inFlight);
            seen.get(variant)?.push(measured);
            console.error(
              `${backend} ${variant} repeat ${repeat + 1}/${repeats}: ${formatNumber(measured.runsPerSec, 0)} runs/s, ${formatNumber(measured.cpuUsPerRun, 0)} µs CPU/run`,
            );
          }
        }
      } finally {
        await pool.close();
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
  for (let repeat = 0; repeat < repeats; repeat++)
    trips.push(await roundTrips(messageBytes, 20_000));
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
  workerMain(workerData as Role);
}
