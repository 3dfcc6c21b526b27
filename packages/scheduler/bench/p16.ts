// P16 — scheduler overhead, as ratios measured side by side in one run.
//
// For each pair the baseline (A) and the scheduler variant (B) run as alternating batches,
// A B, then B A on the next repeat (so neither always runs first, warm or after the other's
// garbage), each batch timed alone. No GC is forced between batches: a full GC with no
// instance of a class alive drops that class's hidden-class transitions, which deoptimises
// every function that allocates it, so forced GCs charged parallelLimit a re-optimisation per
// batch that real programs do not pay (measured: 2× at 10 items with them, ~1.1× without). The
// ratio of
// one repeat is B's cost per op over A's; the table gives the median over the repeats and
// its min..max, plus each side's median for the reader. Nothing is asserted.
//
// Cost is this process's CPU time (user + system, all its threads, from process.cpuUsage),
// which is what the scheduler adds and hardly moves when other processes load the machine
// (on a shared 2-core box, wall time mostly measures whether the batch got a core). The
// wall-clock ratio is printed beside it.
//
//   pnpm --filter @loom/scheduler bench:ratio            (P16_REPEATS=31 by default, ≥ 5)
//   P16_ONLY='1000 items' pnpm --filter @loom/scheduler bench:ratio   (pairs whose text matches)
import { arch, cpus, loadavg } from 'node:os';
import { createScheduler } from '../src/index.js';
import {
  directAwait,
  directBurst,
  double,
  doubleReadingSignal,
  itemsOf,
  parallel,
  promiseAll,
  schedulerBurst,
  schedulerInSeries,
  scheduleUncapped,
} from './p16-workloads.js';

interface Side {
  readonly label: string;
  /** Runs one batch and returns how many operations it did. */
  readonly run: () => Promise<number>;
}

interface Pair {
  readonly what: string;
  readonly goal: number | undefined;
  readonly a: Side;
  readonly b: Side;
}

const repeats = Number(process.env.P16_REPEATS ?? 31);
if (!Number.isInteger(repeats) || repeats < 5) {
  throw new Error(
    `P16_REPEATS must be a whole number ≥ 5 (the method asks for 5+), got ${repeats}`,
  );
}

const awaitsPerBatch = 100_000;
const itemsPerBatch = 100_000;

// One op here is one whole call over `count` items.
function parallelPair(count: number, goal: number | undefined, readsSignal = false): Pair {
  const items = itemsOf(count);
  const rounds = itemsPerBatch / count;
  const fn = readsSignal ? doubleReadingSignal : double;
  const subject = readsSignal
    ? '`parallelLimit(items, Infinity, fn)` with fn reading `context.signal`'
    : '`parallelLimit(items, Infinity, fn)`';
  return {
    what: `${subject} vs \`Promise.all(items.map(fn))\`, ${count} items (op = one call)`,
    goal,
    a: { label: 'Promise.all', run: async () => (await promiseAll(items, rounds)) / count },
    b: {
      label: 'parallelLimit',
      run: async () => (await parallel(items, Infinity, rounds, fn)) / count,
    },
  };
}

const pairs: Pair[] = [
  {
    what: '`schedule(task)` (module-level, no cap) vs `await task()` (op = one await)',
    goal: 1.05,
    a: { label: 'direct await', run: () => directAwait(awaitsPerBatch) },
    b: { label: 'schedule', run: () => scheduleUncapped(awaitsPerBatch) },
  },
  parallelPair(100, 2),
  parallelPair(10, 2),
  parallelPair(1000, 2),
  parallelPair(100, undefined, true),
  {
    what: '`createScheduler().schedule(task)` (no cap, counts running) vs `await task()` (op = one await)',
    goal: undefined,
    a: { label: 'direct await', run: () => directAwait(awaitsPerBatch) },
    b: {
      label: 'createScheduler()',
      run: () => schedulerInSeries(createScheduler(), awaitsPerBatch),
    },
  },
  {
    what: '1,000 tasks at once through `createScheduler({ concurrencyMax: 8 })` vs `Promise.all` of direct calls (op = one task)',
    goal: undefined,
    a: {
      label: 'Promise.all',
      run: async () => {
        let ops = 0;
        for (let r = 0; r < itemsPerBatch / 1000; r++) ops += await directBurst(1000);
        return ops;
      },
    },
    b: {
      label: 'concurrencyMax 8',
      run: async () => {
        const scheduler = createScheduler({ concurrencyMax: 8 });
        let ops = 0;
        for (let r = 0; r < itemsPerBatch / 1000; r++) ops += await schedulerBurst(scheduler, 1000);
        return ops;
      },
    },
  },
];

interface Cost {
  readonly cpuNs: number;
  readonly wallNs: number;
}

/** One batch's CPU and wall time per op, in ns. */
async function timeOne(side: Side): Promise<Cost> {
  const cpuStart = process.cpuUsage();
  const wallStart = process.hrtime.bigint();
  const ops = await side.run();
  const wallNs = Number(process.hrtime.bigint() - wallStart);
  const cpu = process.cpuUsage(cpuStart);
  return { cpuNs: ((cpu.user + cpu.system) * 1000) / ops, wallNs: wallNs / ops };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function range(values: number[]): string {
  return `${Math.min(...values).toFixed(2)}..${Math.max(...values).toFixed(2)}`;
}

const only = process.env.P16_ONLY;
const rows: string[] = [];
for (const pair of pairs.filter((p) => only === undefined || p.what.includes(only))) {
  // Warm-up: let both sides reach optimised code before anything is timed.
  for (let i = 0; i < 3; i++) {
    await timeOne(pair.a);
    await timeOne(pair.b);
  }
  const aCpu: number[] = [];
  const bCpu: number[] = [];
  const cpuRatios: number[] = [];
  const wallRatios: number[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    let a: Cost;
    let b: Cost;
    if (repeat % 2 === 0) {
      a = await timeOne(pair.a);
      b = await timeOne(pair.b);
    } else {
      b = await timeOne(pair.b);
      a = await timeOne(pair.a);
    }
    aCpu.push(a.cpuNs);
    bCpu.push(b.cpuNs);
    cpuRatios.push(b.cpuNs / a.cpuNs);
    wallRatios.push(b.wallNs / a.wallNs);
  }
  const ratio = median(cpuRatios);
  let verdict = 'informational';
  if (pair.goal !== undefined) {
    verdict = ratio <= pair.goal ? `met (≤ ${pair.goal}×)` : `**missed** (goal ≤ ${pair.goal}×)`;
  }
  const row = [
    pair.what,
    median(aCpu).toFixed(0),
    median(bCpu).toFixed(0),
    `**${ratio.toFixed(3)}×**`,
    range(cpuRatios),
    `${median(wallRatios).toFixed(3)}× (${range(wallRatios)})`,
    verdict,
  ].join(' | ');
  rows.push(`| ${row} |`);
  process.stderr.write(`| ${row} |\n`);
}

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const load = loadavg()
  .map((value) => value.toFixed(1))
  .join(' / ');
console.log(
  `\nMachine: ${cpus().length} logical CPUs (${cpu}, ${arch()}), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; ${repeats} interleaved repeats per pair; load average at the end (1 / 5 / 15 min): ${load}.\n`,
);
console.log(
  '| Pair (B vs A) | A CPU ns/op | B CPU ns/op | B/A CPU, median | B/A CPU, min..max | B/A wall, median (min..max) | Goal |',
);
console.log('|---|---:|---:|---:|---:|---:|---|');
for (const row of rows) console.log(row);
