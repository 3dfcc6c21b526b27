// Router lookup against a linear scan of the routes, as ratios measured side by side in one run
// (the method of packages/scheduler/bench/p16.ts): for each route count the linear scan (A) and
// the router's index (B) run as alternating batches, A B then B A, each timed alone; the ratio
// of one repeat is B's CPU cost per lookup over A's. The table gives the median over the repeats
// and its min..max, plus each side's median. Nothing is asserted.
//
//   pnpm --filter @loom/reasoning bench:ratio          (ROUTER_REPEATS=11 by default, ≥ 5)
import { arch, cpus, loadavg } from 'node:os';
import { linearScan, queries, routerOf, routesOf } from './router-workload.js';

const repeats = Number(process.env.ROUTER_REPEATS ?? 11);
if (!Number.isInteger(repeats) || repeats < 5) {
  throw new Error(`ROUTER_REPEATS must be a whole number ≥ 5, got ${repeats}`);
}

// Fewer lookups per batch where the linear scan is slow, so every batch takes tens of ms.
const lookupsFor = (count: number) => Math.max(10_000, 2_000_000 / count);
const asked = queries();
let sink = 0;

interface Cost {
  cpuNs: number;
  wallNs: number;
}

function timeOne(lookup: (tags: string[]) => { length: number }, lookupsPerBatch: number): Cost {
  const cpuStart = process.cpuUsage();
  const wallStart = process.hrtime.bigint();
  for (let i = 0; i < lookupsPerBatch; i++) {
    sink += lookup(asked[i % asked.length] as string[]).length;
  }
  const wallNs = Number(process.hrtime.bigint() - wallStart);
  const cpu = process.cpuUsage(cpuStart);
  return {
    cpuNs: ((cpu.user + cpu.system) * 1000) / lookupsPerBatch,
    wallNs: wallNs / lookupsPerBatch,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function range(values: number[], digits = 3): string {
  return `${Math.min(...values).toFixed(digits)}..${Math.max(...values).toFixed(digits)}`;
}

const rows: string[] = [];
for (const count of [10, 100, 1_000]) {
  const routes = routesOf(count);
  const router = routerOf(routes);
  const linear = (tags: string[]) => linearScan(routes, tags);
  const indexed = (tags: string[]) => router.candidates(tags);
  const lookups = lookupsFor(count);
  for (let i = 0; i < 3; i++) {
    timeOne(linear, lookups);
    timeOne(indexed, lookups);
  }
  const aCpu: number[] = [];
  const bCpu: number[] = [];
  const ratios: number[] = [];
  const wallRatios: number[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    const [a, b] =
      repeat % 2 === 0
        ? [timeOne(linear, lookups), timeOne(indexed, lookups)]
        : (() => {
            const second = timeOne(indexed, lookups);
            return [timeOne(linear, lookups), second];
          })();
    aCpu.push(a.cpuNs);
    bCpu.push(b.cpuNs);
    ratios.push(b.cpuNs / a.cpuNs);
    wallRatios.push(b.wallNs / a.wallNs);
  }
  const row = [
    `${count.toLocaleString('en')} routes`,
    median(aCpu).toFixed(0),
    median(bCpu).toFixed(0),
    `**${median(ratios).toFixed(3)}×**`,
    range(ratios),
    `${median(wallRatios).toFixed(3)}× (${range(wallRatios)})`,
  ].join(' | ');
  rows.push(`| ${row} |`);
  process.stderr.write(`| ${row} |\n`);
}

const load = loadavg()
  .map((value) => value.toFixed(1))
  .join(' / ');
console.log(
  `\nMachine: ${cpus().length} logical CPUs (${cpus()[0]?.model ?? 'unknown CPU'}, ${arch()}), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; ${repeats} interleaved repeats; 200,000 / 20,000 / 10,000 lookups per batch at 10 / 100 / 1,000 routes (64 distinct two-tag queries, 3 tags per route from 16); load average at the end (1 / 5 / 15 min): ${load}.\n`,
);
console.log(
  '| Routes | A: linear scan CPU ns/lookup | B: router index CPU ns/lookup | B/A CPU, median | B/A CPU, min..max | B/A wall, median (min..max) |',
);
console.log('|---|---:|---:|---:|---:|---:|');
for (const row of rows) console.log(row);
if (sink < 0) console.log(sink);
