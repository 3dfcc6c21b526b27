// P12 — content resolution: 50 references resolved through a content store that costs 2 ms per
// round trip, in three shapes measured side by side in one process: serialised awaits (one
// `get` after another), coalesced parallel `get`s (the resolving store over a store without
// getMany) and one `getMany` (the resolving store). Beside them, one bare round trip of the same
// store (`get` of one key): the goal is getMany ≤ 1.5× that.
//
// Each repeat runs the four in a rotated order (so none always runs first or warm); the table
// gives the median wall time over the repeats and its min..max, and the ratios of the medians.
// Wall time is the measure here: the work is waiting for round trips, not CPU.
//
//   pnpm --filter @loom/plugin-content bench        (P12_REPEATS=31 by default, ≥ 5)
import { arch, cpus, loadavg } from 'node:os';
import {
  type P12Workload,
  p12Workload,
  readCoalesced,
  readGetMany,
  readSerialised,
  refsPerRead,
} from './p12-workload.js';

const roundTripMs = 2;
const repeats = Math.max(5, Number(process.env.P12_REPEATS ?? 31));

const shapes: Array<[string, (work: P12Workload) => Promise<unknown>]> = [
  [
    'one bare round trip (get of one key)',
    async (work) => {
      const [event] = await work.log.read(work.executionId);
      const ref = (event!.payload as { result: { $content: `sha256:${string}` } }).result;
      return work.withGetMany.get(ref.$content);
    },
  ],
  ['serialised gets', readSerialised],
  ['coalesced parallel gets', readCoalesced],
  ['one getMany', readGetMany],
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const work = await p12Workload(roundTripMs);
const times = shapes.map(() => [] as number[]);
const trips = shapes.map(() => 0);
for (const [, read] of shapes) await read(work); // warm up once each
const loadBefore = loadavg();
for (let repeat = 0; repeat < repeats; repeat++) {
  for (let step = 0; step < shapes.length; step++) {
    const index = (repeat + step) % shapes.length;
    const [, read] = shapes[index] as [string, (work: P12Workload) => Promise<unknown>];
    work.withGetMany.reset();
    work.withoutGetMany.reset();
    const started = performance.now();
    await read(work);
    (times[index] as number[]).push(performance.now() - started);
    trips[index] = work.withGetMany.roundTrips + work.withoutGetMany.roundTrips;
  }
}
const loadAfter = loadavg();

const bare = median(times[0] as number[]);
const getMany = median(times[3] as number[]);
console.log(
  `P12: ${refsPerRead} references, ${roundTripMs} ms per round trip, ${repeats} repeats; ` +
    `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'} (${arch()}), node ${process.version}; ` +
    `load average ${loadBefore.map((n) => n.toFixed(2)).join(' ')} before, ` +
    `${loadAfter.map((n) => n.toFixed(2)).join(' ')} after; ${new Date().toISOString()}`,
);
console.log('');
console.log('| Shape | Round trips | Median ms | Min..max ms | × one round trip | × getMany |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
shapes.forEach(([name], index) => {
  const series = times[index] as number[];
  const m = median(series);
  console.log(
    `| ${name} | ${trips[index]} | ${m.toFixed(2)} | ${Math.min(...series).toFixed(2)}..${Math.max(...series).toFixed(2)} | ${(m / bare).toFixed(2)}× | ${(m / getMany).toFixed(2)}× |`,
  );
});
console.log('');
console.log(
  `goal: getMany ≤ 1.5× one round trip: ${(getMany / bare).toFixed(2)}× ${getMany / bare <= 1.5 ? 'met' : 'missed'}`,
);
