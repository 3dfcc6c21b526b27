// P14 — render: traverseBlueprint's growth from 10 to 10,000 nodes, and the cost and passes of
// rendering a 400-step run, measured side by side in one process.
//
// Linearity: for each size pair (n, 10n) the two walks run as alternating batches, small then
// large, then large then small on the next repeat (so neither always runs first or warm), each
// batch timed alone over three million visited nodes (~0.2 s: CPU time is counted in scheduler
// ticks, and shorter batches mostly measured the tick). One repeat's ratio is the large
// blueprint's cost per walk over the small one's (10× the nodes: linear is 10×); the table gives
// the median over the repeats and its min..max. Cost is this process's CPU time (user +
// system, from process.cpuUsage), which hardly moves when other processes load the machine;
// wall time is printed beside it.
//
// Rendering: a 400-step run (934 messages) rendered with no budget limit (everything fits)
// and under a 32,000-token budget (the oldest steps drop); the passes each render reports and
// the texts its tokenizer measured are counted, not timed.
//
//   pnpm --filter @loom/render bench:ratio         (P14_REPEATS=31 by default, ≥ 5)
import { arch, cpus, loadavg } from 'node:os';
import { renderHistory, renderMessages } from '../src/index.js';
import {
  agentBlueprint,
  blueprintOf,
  countingTokenizer,
  runOf,
  traverse,
} from './p14-workloads.js';

const repeats = Number(process.env.P14_REPEATS ?? 31);
if (!Number.isInteger(repeats) || repeats < 5) {
  throw new Error(
    `P14_REPEATS must be a whole number ≥ 5 (the method asks for 5+), got ${repeats}`,
  );
}

interface Cost {
  readonly cpuNs: number;
  readonly wallNs: number;
}

/** Runs `fn` `times` times; CPU and wall time per run, in ns. */
function timeOne(fn: () => unknown, times: number): Cost {
  const cpuStart = process.cpuUsage();
  const wallStart = process.hrtime.bigint();
  for (let i = 0; i < times; i++) fn();
  const wallNs = Number(process.hrtime.bigint() - wallStart);
  const cpu = process.cpuUsage(cpuStart);
  return { cpuNs: ((cpu.user + cpu.system) * 1000) / times, wallNs: wallNs / times };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function range(values: number[], digits = 2): string {
  return `${Math.min(...values).toFixed(digits)}..${Math.max(...values).toFixed(digits)}`;
}

const nodesPerBatch = 3_000_000;
const rows: string[] = [];
const emit = (cells: string[]) => {
  const row = `| ${cells.join(' | ')} |`;
  rows.push(row);
  process.stderr.write(`${row}\n`);
};

for (const [small, large, goal] of [
  [10, 100, undefined],
  [100, 1000, undefined],
  [1000, 10_000, 11],
] as const) {
  const a = blueprintOf(small);
  const b = blueprintOf(large);
  if (traverse(a) !== small || traverse(b) !== large) throw new Error('blueprintOf miscounted');
  const walkA = () => traverse(a);
  const walkB = () => traverse(b);
  for (let i = 0; i < 3; i++) {
    timeOne(walkA, nodesPerBatch / small);
    timeOne(walkB, nodesPerBatch / large);
  }
  const aCpu: number[] = [];
  const bCpu: number[] = [];
  const cpuRatios: number[] = [];
  const wallRatios: number[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    let x: Cost;
    let y: Cost;
    if (repeat % 2 === 0) {
      x = timeOne(walkA, nodesPerBatch / small);
      y = timeOne(walkB, nodesPerBatch / large);
    } else {
      y = timeOne(walkB, nodesPerBatch / large);
      x = timeOne(walkA, nodesPerBatch / small);
    }
    aCpu.push(x.cpuNs);
    bCpu.push(y.cpuNs);
    cpuRatios.push(y.cpuNs / x.cpuNs);
    wallRatios.push(y.wallNs / x.wallNs);
  }
  const ratio = median(cpuRatios);
  const verdict =
    goal === undefined
      ? 'informational'
      : ratio <= goal
        ? `met (≤ ${goal}×)`
        : `**missed** (goal ≤ ${goal}×)`;
  emit([
    `\`traverseBlueprint\` ${large.toLocaleString('en')} vs ${small.toLocaleString('en')} nodes (µs per walk)`,
    `${(median(aCpu) / 1000).toFixed(2)} → ${(median(bCpu) / 1000).toFixed(2)}`,
    `**${ratio.toFixed(2)}×**`,
    range(cpuRatios),
    `${median(wallRatios).toFixed(2)}× (${range(wallRatios)})`,
    verdict,
  ]);
}

const history = runOf(400);
const blueprint = agentBlueprint(history);
const renders: [string, number][] = [
  ['`renderMessages`, 400-step run, everything fits', Infinity],
  ['`renderMessages`, 400-step run, 32,000-token budget', 32_000],
];
for (const [what, tokenBudget] of renders) {
  const tokenizer = countingTokenizer();
  const once = renderMessages(blueprint, { tokenBudget, tokenizer });
  const textsPerRender = tokenizer.texts;
  for (let i = 0; i < 20; i++) renderMessages(blueprint, { tokenBudget, tokenizer });
  const cpu: number[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    cpu.push(timeOne(() => renderMessages(blueprint, { tokenBudget, tokenizer }), 50).cpuNs / 1000);
  }
  const verdict =
    once.passes <= 2
      ? `met: ${once.passes} pass${once.passes === 1 ? '' : 'es'} (≤ 2)`
      : '**missed**';
  emit([
    `${what}: ${once.messages.length} messages kept, ${once.dropped.length} steps dropped, ${textsPerRender} texts measured once each (µs per render)`,
    median(cpu).toFixed(0),
    '—',
    range(cpu, 0),
    '—',
    verdict,
  ]);
}
{
  for (let i = 0; i < 20; i++) renderHistory(history);
  const cpu: number[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    cpu.push(timeOne(() => renderHistory(history), 50).cpuNs / 1000);
  }
  emit([
    `\`renderHistory\`, 400-step run, ${renderHistory(history).length} messages (µs per render)`,
    median(cpu).toFixed(0),
    '—',
    range(cpu, 0),
    '—',
    'informational',
  ]);
}

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const load = loadavg()
  .map((value) => value.toFixed(1))
  .join(' / ');
console.log(
  `\nMachine: ${cpus().length} logical CPUs (${cpu}, ${arch()}), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; ${repeats} interleaved repeats; load average at the end (1 / 5 / 15 min): ${load}.\n`,
);
console.log(
  '| What | CPU, median | Large/small CPU, median | min..max | Large/small wall, median (min..max) | Goal |',
);
console.log('|---|---:|---:|---:|---:|---|');
for (const row of rows) console.log(row);
