// `bench:agents`: P6 (agent fan-out) and P7 (turn cost against run length), see README.md.
import {
  type AgentStore,
  type FanoutResult,
  type LengthResult,
  runFanoutCell,
  runLengthCell,
} from './agent-cell.js';
import type { RunContext, SectionReport } from './bench-run.js';
import { backendSkip, executionsFor } from './execution-suite.js';
import { formatCount, formatMs, formatRatio, formatSummary } from './format-number.js';
import { interleavedSchedule } from './interleave.js';
import type { Backend } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { median, summarize } from './stats.js';

/** PERFORMANCE.md P6: 2 model calls × 50 ms, a quarter of the runs in flight (20,000 / 5,000). */
export const fanoutLatencyMs = 50;
export const fanoutWaves = 4;
const fanoutRatioGoal = 1.15;
const heapGoalBytes = 64 * 1024 * 1024;
/** PERFORMANCE.md P7. */
export const lengthTurns = [10, 100, 400] as const;
export const observationSizes = [16, 8 * 1024] as const;
const lengthRatioGoal = 1.15;

const mb = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MB`;

function storeFor(context: RunContext, kind: Backend, name: string): AgentStore {
  if (kind === 'memory') return { kind };
  if (kind === 'sqlite') return { kind, directory: context.tmpDir, name };
  const pg = context.pg as Exclude<RunContext['pg'], string>;
  return { kind, url: pg.url, schema: pg.schema };
}

/** The P6 line for one backend. */
export function fanoutSummaryLine(backend: Backend, cells: readonly FanoutResult[]): string {
  const first = cells[0];
  if (first === undefined) return `P6 ${backend}: no repeats ran`;
  const ratio = summarize(cells.map((cell) => cell.wallMs / cell.idealMs));
  const heap = median(cells.map((cell) => cell.peakHeapDeltaBytes));
  const cpu = median(cells.map((cell) => cell.cpuMsPerRun));
  const goals = backend === 'memory' ? ` (goal ≤ ${formatRatio(fanoutRatioGoal)})` : '';
  const heapGoal = backend === 'memory' ? ` (goal ≤ ${mb(heapGoalBytes)})` : '';
  return `P6 ${backend === 'sqlite' ? 'sqlite FULL' : backend}: ${formatCount(first.runs)} runs, ${formatCount(first.inFlight)} in flight: wall ÷ ideal ${formatMs(first.idealMs)} ms = ${formatSummary(ratio, formatRatio)}${goals}; peak heap delta ${mb(heap)}${heapGoal}; Node CPU ${formatMs(cpu)} ms per run; over ${cells.length} repeats`;
}

/** P6: fan-out of agent runs, stub model 2 calls × 50 ms, on memory, SQLite FULL and Postgres. */
export async function agentFanoutSuite(context: RunContext): Promise<SectionReport> {
  const { knobs, progress } = context;
  const skipped: string[] = [];
  const cells: { backend: Backend; repeat: number; result: FanoutResult }[] = [];
  for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
    const skip = backendSkip(context, kind);
    if (skip !== undefined) {
      skipped.push(skip);
      continue;
    }
    const runs = executionsFor(context, kind);
    const inFlight = Math.max(1, Math.ceil(runs / fanoutWaves));
    // A warm-up cell (not reported): the JIT and the store's first writes.
    await runFanoutCell(storeFor(context, kind, `p6-${kind}-warm`), {
      runs: Math.min(runs, 400),
      inFlight: Math.min(inFlight, 100),
      latencyMs: fanoutLatencyMs,
    });
    for (let repeat = 0; repeat < knobs.repeats; repeat++) {
      const label = `P6 ${kind}: ${runs} runs, ${inFlight} in flight, repeat ${repeat + 1}/${knobs.repeats}`;
      progress.update(label, true);
      const result = await runFanoutCell(storeFor(context, kind, `p6-${kind}-${repeat}`), {
        runs,
        inFlight,
        latencyMs: fanoutLatencyMs,
        onProgress: (done) => progress.update(`${label}: ${done}/${runs} runs`),
      });
      cells.push({ backend: kind, repeat, result });
    }
  }
  const backends = [...new Set(cells.map((cell) => cell.backend))];
  const rows = backends.map((backend) => {
    const of = cells.filter((cell) => cell.backend === backend).map((cell) => cell.result);
    const first = of[0] as FanoutResult;
    return [
      backend === 'sqlite' ? 'sqlite FULL' : backend,
      formatCount(first.runs),
      formatCount(first.inFlight),
      formatSummary(summarize(of.map((cell) => cell.wallMs)), formatMs),
      formatMs(first.idealMs),
      formatSummary(summarize(of.map((cell) => cell.wallMs / cell.idealMs)), formatRatio),
      formatCount((first.runs / median(of.map((cell) => cell.wallMs))) * 1000),
      mb(median(of.map((cell) => cell.peakHeapDeltaBytes))),
      mb(median(of.map((cell) => cell.retainedHeapDeltaBytes))),
      formatCount(first.eventsPerRun),
      formatMs(median(of.map((cell) => cell.cpuMsPerRun))),
      formatCount(1000 / median(of.map((cell) => cell.cpuMsPerRun))),
    ];
  });
  const lines = [
    '## P6: agent fan-out',
    '',
    '```sh',
    context.command,
    '```',
    '',
    `Each run: the stub model (${fanoutLatencyMs} ms per call) asks for a read-only no-op tool, the tool runs, the model answers: 2 model calls, 1 tool call, completed (checked for every run). A quarter of the runs in flight (a new run starts as one ends), so the ideal is ${fanoutWaves} waves × 2 × ${fanoutLatencyMs} ms. ${knobs.repeats} repeats after a warm-up cell; wall: median (min..max). Peak heap delta: the highest \`heapUsed\` sampled every 10 ms minus the heap before the cell (after a GC); retained: after the cell and a GC, the runtime and its store still open (on memory the store holds every event). Node CPU per run: \`process.cpuUsage\` (user + system) over the cell ÷ runs; runs per CPU-second is its inverse, the rate this process could reach with nothing but CPU in the way (the ideal needs runs ÷ 0.4 s).`,
    '',
    markdownTable(
      [
        'Backend',
        'Runs',
        'In flight',
        'Wall ms',
        'Ideal ms',
        'Wall ÷ ideal',
        'Runs/s',
        'Peak heap Δ',
        'Retained heap Δ',
        'Events per run',
        'Node CPU ms per run',
        'Runs per CPU-second',
      ],
      rows,
      [
        'left',
        'right',
        'right',
        'right',
        'right',
        'right',
        'right',
        'right',
        'right',
        'right',
        'right',
        'right',
      ],
    ),
  ];
  if (skipped.length > 0) lines.push('', `Skipped: ${skipped.join('; ')}.`);
  return {
    id: 'p6',
    title: 'P6: agent fan-out',
    markdown: lines.join('\n'),
    cells,
    skipped,
    summary: backends.map((backend) =>
      fanoutSummaryLine(
        backend,
        cells.filter((cell) => cell.backend === backend).map((cell) => cell.result),
      ),
    ),
  };
}

/** Per-turn figures of one P7 cell. */
export function perTurn(cell: LengthResult): { ms: number; bytes: number; events: number } {
  return {
    ms: cell.wallMs / cell.turns,
    bytes: cell.bytes / cell.turns,
    events: cell.events / cell.turns,
  };
}

/** The P7 line for one observation size: time and bytes per turn at the longest run ÷ at the shortest. */
export function lengthSummaryLine(
  observationBytes: number,
  cells: readonly { repeat: number; result: LengthResult }[],
): string {
  const of = (turns: number) => cells.filter((cell) => cell.result.turns === turns);
  const shortest = Math.min(...cells.map((cell) => cell.result.turns));
  const longest = Math.max(...cells.map((cell) => cell.result.turns));
  const pairs = of(longest).flatMap((long) => {
    const short = of(shortest).find((cell) => cell.repeat === long.repeat);
    return short === undefined ? [] : [{ long: long.result, short: short.result }];
  });
  if (pairs.length === 0) return `P7 ${observationBytes} B observations: no paired repeats ran`;
  const time = summarize(pairs.map((pair) => perTurn(pair.long).ms / perTurn(pair.short).ms));
  const bytes = median(pairs.map((pair) => perTurn(pair.long).bytes / perTurn(pair.short).bytes));
  return `P7 sqlite FULL, ${formatCount(observationBytes)} B observations: per turn at ${longest} ÷ at ${shortest}: time ${formatSummary(time, formatRatio)}, bytes ${formatRatio(bytes)} (goal ≤ ${formatRatio(lengthRatioGoal)} each), over ${pairs.length} paired repeats`;
}

/** P7: runs of 10, 100 and 400 turns, small and 8 KiB observations, SQLite FULL. */
export async function agentLengthSuite(context: RunContext): Promise<SectionReport> {
  const { knobs, progress } = context;
  const skip = backendSkip(context, 'sqlite');
  if (skip !== undefined) {
    return {
      id: 'p7',
      title: 'P7: turn cost against run length',
      markdown: `## P7: turn cost against run length\n\nSkipped: ${skip}.`,
      cells: [],
      skipped: [skip],
    };
  }
  const variants = observationSizes.flatMap((observationBytes) =>
    lengthTurns.map((turns) => ({ turns, observationBytes })),
  );
  // Warm-up (not reported).
  await runLengthCell(storeFor(context, 'sqlite', 'p7-warm'), { turns: 10, observationBytes: 16 });
  const cells: { repeat: number; result: LengthResult }[] = [];
  let n = 0;
  for (const { repeat, variant } of interleavedSchedule(variants, knobs.repeats)) {
    const label = `P7 sqlite FULL: ${variant.turns} turns, ${variant.observationBytes} B observations, repeat ${repeat + 1}/${knobs.repeats}`;
    progress.update(label, true);
    const result = await runLengthCell(storeFor(context, 'sqlite', `p7-${n++}`), variant);
    cells.push({ repeat, result });
  }
  const rows: string[][] = [];
  for (const observationBytes of observationSizes) {
    const base = cells.filter(
      (cell) => cell.result.observationBytes === observationBytes && cell.result.turns === 10,
    );
    const baseMs = median(base.map((cell) => perTurn(cell.result).ms));
    const baseBytes = median(base.map((cell) => perTurn(cell.result).bytes));
    for (const turns of lengthTurns) {
      const of = cells
        .filter((cell) => cell.result.observationBytes === observationBytes)
        .filter((cell) => cell.result.turns === turns)
        .map((cell) => perTurn(cell.result));
      const ms = summarize(of.map((cell) => cell.ms));
      const bytes = median(of.map((cell) => cell.bytes));
      rows.push([
        `${formatCount(observationBytes)} B`,
        String(turns),
        formatSummary(ms, formatMs),
        formatRatio(ms.median / baseMs),
        formatCount(bytes),
        formatRatio(bytes / baseBytes),
        formatCount(median(of.map((cell) => cell.events))),
      ]);
    }
  }
  const lines = [
    '## P7: turn cost against run length',
    '',
    '```sh',
    context.command,
    '```',
    '',
    `One agent run per cell, on a fresh SQLite file (FULL): n − 1 turns calling a read-only tool that returns a string of the observation size, then the final answer; stub model without latency, default prompt (history within the 128,000-token budget). The six variants run interleaved in a rotating order, ${knobs.repeats} repeats after a warm-up. Time per turn: the run's wall time ÷ turns, median (min..max); bytes per turn: the UTF-8 bytes of the run's log event payloads ÷ turns; the ratios are against the 10-turn run of the same observation size.`,
    '',
    markdownTable(
      [
        'Observation',
        'Turns',
        'ms per turn',
        '÷ at 10',
        'Bytes per turn',
        '÷ at 10',
        'Events per turn',
      ],
      rows,
      ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
  ];
  return {
    id: 'p7',
    title: 'P7: turn cost against run length',
    markdown: lines.join('\n'),
    cells,
    skipped: [],
    summary: observationSizes.map((size) =>
      lengthSummaryLine(
        size,
        cells.filter((cell) => cell.result.observationBytes === size),
      ),
    ),
  };
}
