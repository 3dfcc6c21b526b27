// First-call latency of an isolated tool, cold against warm, measured side by side in one run.
// Cold: a new tool (no warm children) is called once; the call spawns a Node child, loads the
// module and runs. Warm: a new tool with `warm: 1` whose child was spawned and loaded by
// `isolate.warm()` (not timed) is called once. Repeats alternate cold, warm then warm, cold; the
// table gives each side's median (and min..max) and the median of the per-repeat ratios.
// Nothing is asserted. Needs the built package (`pnpm build`): it imports dist/, as an app would.
//
//   pnpm --filter @loom/agent-loop exec tsx bench/isolate-first-call.ts   (ISOLATE_REPEATS=15, ≥ 5)
import { cpus, loadavg } from 'node:os';
import { defineTool, type Tool } from '../dist/index.js';

const repeats = Number(process.env.ISOLATE_REPEATS ?? 15);
if (!Number.isInteger(repeats) || repeats < 5) {
  throw new Error(`ISOLATE_REPEATS must be a whole number ≥ 5, got ${repeats}`);
}
const module = new URL('./isolate-echo.mjs', import.meta.url);

function tool(warm: number): Tool {
  return defineTool({
    name: 'echo',
    description: 'echo',
    input: { type: 'object' },
    sideEffect: 'read_only',
    isolate: { module, warm },
  });
}

async function firstCallMs(t: Tool): Promise<number> {
  const started = process.hrtime.bigint();
  await t.run(
    { n: 1 },
    {
      runId: 'bench',
      turn: 1,
      callId: 'c',
      idempotencyKey: 'bench/1.0',
      signal: new AbortController().signal,
    },
  );
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function cold(): Promise<number> {
  const t = tool(0);
  try {
    return await firstCallMs(t);
  } finally {
    await t.isolate?.close();
  }
}

async function warm(): Promise<{ callMs: number; warmMs: number }> {
  const t = tool(1);
  try {
    const started = process.hrtime.bigint();
    await t.isolate?.warm();
    const warmMs = Number(process.hrtime.bigint() - started) / 1e6;
    return { callMs: await firstCallMs(t), warmMs };
  } finally {
    await t.isolate?.close(); // also the replacement spawned behind the call
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const range = (values: number[], digits = 1) =>
  `${Math.min(...values).toFixed(digits)}..${Math.max(...values).toFixed(digits)}`;

// One of each first, not counted: the first spawn of a process pays for cold disk caches.
await cold();
await warm();
const colds: number[] = [];
const warms: number[] = [];
const warmUps: number[] = [];
const ratios: number[] = [];
for (let i = 0; i < repeats; i++) {
  let c: number;
  let w: { callMs: number; warmMs: number };
  if (i % 2 === 0) {
    c = await cold();
    w = await warm();
  } else {
    w = await warm();
    c = await cold();
  }
  colds.push(c);
  warms.push(w.callMs);
  warmUps.push(w.warmMs);
  ratios.push(w.callMs / c);
}

console.log(
  `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}, ${repeats} repeats`,
);
console.log('');
console.log('| first call of an isolated tool | ms, median | min..max |');
console.log('|---|---:|---:|');
console.log(`| cold (spawn + load + call) | ${median(colds).toFixed(1)} | ${range(colds)} |`);
console.log(
  `| warm (child spawned and loaded by warm()) | ${median(warms).toFixed(1)} | ${range(warms)} |`,
);
console.log(
  `| warm ÷ cold, median of paired ratios | **${median(ratios).toFixed(3)}×** | ${range(ratios, 3)} |`,
);
console.log(
  `| (not in the call) warm() itself | ${median(warmUps).toFixed(1)} | ${range(warmUps)} |`,
);
