/**
 * P17 — cron `nextOccurrence` (field jumping) against a minute-by-minute scan, side by side.
 *
 *   pnpm --filter @loom/workflow-runtime bench:ratio
 *
 * For each sparse expression, the two variants answer the same `after` instants (and are
 * checked to agree first). Each repeat times both, interleaved (A B, then B A, …), each
 * batch sized to run about LOOM_BENCH_BATCH_MS (default 100); the ratio of one repeat is scan time per
 * call ÷ nextOccurrence time per call. Prints the median ratio with min..max over
 * LOOM_BENCH_REPEATS repeats (default 9), as a Markdown table. Two baselines: the tight scan
 * (bench/minute-scan.ts, the P17 figure) and the test oracle's naive scan
 * (test/naive-cron-scan.ts: fields re-read from text and a Date per minute, plus its one-day
 * warm-up), for the reader. Absolute times are printed, never asserted.
 */
import { cpus } from 'node:os';
import { nextOccurrence } from '../src/cron/next-occurrence.js';
import { parseCron } from '../src/cron/parse-cron.js';
import type { ParsedCron } from '../src/cron/parsed-cron.js';
import { naiveNextOccurrence } from '../test/naive-cron-scan.js';
import { minuteScan } from './minute-scan.js';

const REPEATS = Number(process.env.LOOM_BENCH_REPEATS ?? 9);
const BATCH_MS = Number(process.env.LOOM_BENCH_BATCH_MS ?? 100);
const DAY_MS = 86_400_000;

interface Case {
  readonly expression: string;
  readonly what: string;
  readonly afters: readonly string[];
}

const CASES: readonly Case[] = [
  {
    expression: '0 0 29 2 *',
    what: 'Feb 29, from points across a leap cycle (incl. 2097 → 2104)',
    afters: [
      '2024-03-01T00:00:00Z',
      '2025-01-15T12:34:00Z',
      '2026-06-01T00:00:00Z',
      '2027-12-31T23:00:00Z',
      '2097-01-01T00:00:00Z',
    ],
  },
  {
    expression: '0 9 * * MON-FRI',
    what: 'weekdays 09:00, from Friday evening',
    afters: [
      '2024-03-08T18:00:00Z',
      '2024-06-14T19:30:00Z',
      '2024-11-01T21:00:00Z',
      '2025-01-10T18:05:00Z',
    ],
  },
  {
    expression: '0 0 LW * *',
    what: 'last weekday of the month, from early in the month',
    afters: [
      '2024-03-01T00:00:00Z',
      '2024-08-02T10:00:00Z',
      '2025-02-01T00:00:00Z',
      '2025-11-03T00:00:00Z',
    ],
  },
  {
    expression: '0 0 * * FRI#5',
    what: 'fifth Friday, from just after one',
    afters: [
      '2024-03-29T00:00:01Z',
      '2024-05-31T00:00:01Z',
      '2024-08-30T00:00:01Z',
      '2025-01-31T00:00:01Z',
    ],
  },
];

type Variant = (parsed: ParsedCron, afterMs: number) => number | undefined;

/** Milliseconds per call of `variant` over `afters`, in a batch sized to about BATCH_MS. */
function timeBatch(
  variant: Variant,
  parsed: ParsedCron,
  afters: readonly number[],
  rounds: number,
) {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let round = 0; round < rounds; round++) {
    for (const after of afters) sink += variant(parsed, after) ?? 0;
  }
  const elapsedMs = Number(process.hrtime.bigint() - start) / 1e6;
  if (sink === 42) console.log('');
  return elapsedMs / (rounds * afters.length);
}

function roundsFor(variant: Variant, parsed: ParsedCron, afters: readonly number[]): number {
  const perCallMs = timeBatch(variant, parsed, afters, 1);
  return Math.max(1, Math.round(BATCH_MS / (perCallMs * afters.length)));
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const µs = (ms: number) => (ms * 1000 < 10 ? (ms * 1000).toFixed(2) : (ms * 1000).toFixed(0));
const ratio = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));

const jump: Variant = (parsed, afterMs) => nextOccurrence(parsed, afterMs, 'UTC');
const tightScan: Variant = (parsed, afterMs) => minuteScan(parsed, afterMs);
const naiveScan: Variant = (parsed, afterMs) =>
  naiveNextOccurrence(parsed.expression, afterMs, 'UTC', 9 * 366 * DAY_MS);

interface Row {
  readonly testCase: Case;
  readonly jumpMs: number;
  readonly tightMs: number;
  readonly naiveMs: number;
  readonly tightRatios: number[];
  readonly naiveRatios: number[];
}

function measure(testCase: Case): Row {
  const parsed = parseCron(testCase.expression);
  const afters = testCase.afters.map(Date.parse);
  for (const after of afters) {
    const expected = nextOccurrence(parsed, after);
    for (const [name, scan] of [
      ['tight scan', tightScan],
      ['naive scan', naiveScan],
    ] as const) {
      const actual = scan(parsed, after);
      if (actual !== expected) {
        throw new Error(
          `${testCase.expression} after ${new Date(after).toISOString()}: nextOccurrence ${new Date(expected).toISOString()} but the ${name} ${actual === undefined ? 'found nothing' : new Date(actual).toISOString()}`,
        );
      }
    }
  }
  const variants = [jump, tightScan, naiveScan] as const;
  for (const variant of variants) timeBatch(variant, parsed, afters, 2); // warm-up
  const rounds = variants.map((variant) => roundsFor(variant, parsed, afters));
  const times: number[][] = [[], [], []];
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    // Interleave, and rotate the order each repeat so no variant always runs first.
    const order = [0, 1, 2].map((i) => (i + repeat) % 3);
    for (const index of order)
      times[index]!.push(timeBatch(variants[index]!, parsed, afters, rounds[index]!));
  }
  const [jumpTimes, tightTimes, naiveTimes] = times as [number[], number[], number[]];
  return {
    testCase,
    jumpMs: median(jumpTimes),
    tightMs: median(tightTimes),
    naiveMs: median(naiveTimes),
    tightRatios: tightTimes.map((t, i) => t / jumpTimes[i]!),
    naiveRatios: naiveTimes.map((t, i) => t / jumpTimes[i]!),
  };
}

function main(): void {
  console.log(
    `P17 cron nextOccurrence vs minute-by-minute scan — ${REPEATS} repeats, batches of ~${BATCH_MS} ms, UTC`,
  );
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, ${new Date().toISOString()}`,
  );
  console.log('');
  console.log(
    '| expression | from | nextOccurrence µs/call | tight scan µs/call | **ratio** median (min..max) | naive scan µs/call | ratio median (min..max) |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|');
  const tightMedians: number[] = [];
  for (const testCase of CASES) {
    const row = measure(testCase);
    const tight = median(row.tightRatios);
    tightMedians.push(tight);
    console.log(
      `| \`${testCase.expression}\` | ${testCase.what} | ${µs(row.jumpMs)} | ${µs(row.tightMs)} | **${ratio(tight)}×** (${ratio(Math.min(...row.tightRatios))}..${ratio(Math.max(...row.tightRatios))}) | ${µs(row.naiveMs)} | ${ratio(median(row.naiveRatios))}× (${ratio(Math.min(...row.naiveRatios))}..${ratio(Math.max(...row.naiveRatios))}) |`,
    );
  }
  console.log('');
  const lowest = Math.min(...tightMedians);
  console.log(
    `goal ≥ 100× the tight scan: lowest median ${ratio(lowest)}× — ${lowest >= 100 ? 'met' : 'NOT met'} on every expression`,
  );
}

main();
