import { loadState, type SnapshotStore } from '@loom/event-runtime';
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import type { BenchBackend } from './bench-backend.js';
import { benchFlow, payload256 } from './bench-flows.js';
import type { RunContext, SectionReport } from './bench-run.js';
import { collectGarbage } from './execution-cell.js';
import { backendOpener, backendSkip } from './execution-suite.js';
import { formatRatio, formatSummary } from './format-number.js';
import { interleavedSchedule } from './interleave.js';
import type { Backend } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { latencies, median, summarize } from './stats.js';

/** Execution lengths in events, and the step counts that write them (2n + 2). */
const sizes = [
  { events: 4, steps: 1 },
  { events: 102, steps: 50 },
  { events: 1_000, steps: 499 },
] as const;
const snapshotEvery = 50;
/** Executions of each size; loads go round-robin over them. */
const executionsPerSize = 3;
const loadsPerCell: Record<Backend, number> = { memory: 500, sqlite: 200, postgres: 100 };
const goalRatio = 1.6;

/** off: no snapshots; two-calls: snapshot, then tail (before issue 15); one-call: loadWithTail. */
type Mode = 'off' | 'two-calls' | 'one-call';
const modeLabel: Record<Mode, string> = {
  off: 'off',
  'two-calls': 'on, 2 calls (before)',
  'one-call': 'on, 1 call (after)',
};

/** The store without `loadWithTail`: loadState then loads the snapshot and reads the tail apart. */
function twoCallView(snapshots: SnapshotStore): SnapshotStore {
  return {
    save: (snapshot) => snapshots.save(snapshot),
    load: (executionId) => snapshots.load(executionId),
    close: () => snapshots.close(),
  };
}

interface Cell {
  backend: Backend;
  mode: Mode;
  events: number;
  repeat: number;
  p50Us: number;
  readsPerLoad: number;
  eventsFoldedPerLoad: number;
}

/** Writes the executions P8 reads, through a runtime that takes snapshots every 50 events. */
async function writeExecutions(backend: BenchBackend, snapshots: SnapshotStore | undefined) {
  const runtime = createKernelRuntime({
    store: backend.events,
    ...(snapshots === undefined ? {} : { snapshots, snapshotEvery }),
  });
  const ids = new Map<number, string[]>();
  const handles = [];
  for (const size of sizes) {
    const list: string[] = [];
    for (let index = 0; index < executionsPerSize; index++) {
      const executionId = `p8-${size.events}-${index}`;
      list.push(executionId);
      handles.push(await runtime.start(benchFlow(size.steps, 0), payload256(), { executionId }));
    }
    ids.set(size.events, list);
  }
  await Promise.all(handles.map((handle) => handle.result()));
  await runtime.idle();
  await runtime.shutdown();
  return ids;
}

/** P8: loadState for 4-, 102- and 1,000-event executions, snapshots on and off. */
export async function readPathSuite(context: RunContext): Promise<SectionReport> {
  const { knobs, progress } = context;
  const cells: Cell[] = [];
  const skipped: string[] = [];
  const backends: Backend[] = [];
  for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
    const skip = backendSkip(context, kind);
    if (skip !== undefined) {
      skipped.push(skip);
      continue;
    }
    backends.push(kind);
    const opener = await backendOpener(context, kind, 'p8-read-path');
    const backend = await opener.cell();
    try {
      const snapshots = typeof backend.snapshots === 'string' ? undefined : backend.snapshots;
      if (typeof backend.snapshots === 'string') {
        skipped.push(`${kind}, snapshots on: ${backend.snapshots}`);
      }
      progress.update(`P8 ${kind}: writing executions of 4, 102 and 1,000 events`, true);
      const ids = await writeExecutions(backend, snapshots);
      const modes: Mode[] = snapshots === undefined ? ['off'] : ['off', 'two-calls', 'one-call'];
      const twoCalls = snapshots === undefined ? undefined : twoCallView(snapshots);
      const variants = modes.flatMap((mode) =>
        sizes.map((size) => ({ mode, events: size.events })),
      );
      const loads = loadsPerCell[kind];
      for (const { repeat, variant } of interleavedSchedule(variants, knobs.repeats)) {
        const { mode, events } = variant;
        progress.update(
          `P8 ${kind} snapshots ${mode} ${events} events repeat ${repeat + 1}/${knobs.repeats}`,
          true,
        );
        const list = ids.get(events) as string[];
        const latencyMs = new Float64Array(loads);
        let reads = 0;
        let folded = 0;
        collectGarbage();
        for (let index = 0; index < loads; index++) {
          const executionId = list[index % list.length] as string;
          const t0 = performance.now();
          const loaded = await loadState(
            backend.events,
            mode === 'one-call' ? snapshots : mode === 'two-calls' ? twoCalls : undefined,
            executionId,
          );
          latencyMs[index] = performance.now() - t0;
          if (loaded.state?.nextSequence !== events || loaded.state.status !== 'completed') {
            throw new Error(
              `P8 ${kind}: ${executionId} loaded at sequence ${loaded.state?.nextSequence} with status ${loaded.state?.status}, expected ${events} and completed`,
            );
          }
          reads += loaded.reads;
          folded += loaded.eventsRead;
        }
        cells.push({
          backend: kind,
          mode,
          events,
          repeat,
          p50Us: latencies(latencyMs).p50 * 1000,
          readsPerLoad: reads / loads,
          eventsFoldedPerLoad: folded / loads,
        });
      }
    } finally {
      if (opener.shared === undefined) await backend.close();
      await opener.shared?.close();
    }
  }
  return report(context, backends, cells, skipped);
}

function report(
  context: RunContext,
  backends: readonly Backend[],
  cells: readonly Cell[],
  skipped: readonly string[],
): SectionReport {
  const lines: string[] = ['## P8: read path', ''];
  lines.push(
    '```sh',
    `${context.command}   # the whole run`,
    `${context.commandFor('p8')}   # this section alone`,
    '```',
    '',
  );
  lines.push(
    `\`loadState\` of completed no-op executions of 4, 102 and 1,000 events (1, 50 and 499 steps), ${executionsPerSize} of each, written by a runtime with \`snapshotEvery: ${snapshotEvery}\`; snapshots off, on with two calls (the snapshot, then the events after it: the protocol before issue 15, forced by hiding \`loadWithTail\`) and on with one call (\`loadWithTail\`: snapshot and tail in one call; one statement on Postgres), interleaved; one load at a time (${Object.entries(
      loadsPerCell,
    )
      .map(([backend, loads]) => `${loads} loads per cell on ${backend}`)
      .join(
        ', ',
      )}). ${context.knobs.repeats} interleaved repeats; p50 in µs is the median of the per-repeat p50s; the ratio is 1,000-event p50 ÷ 4-event p50, paired per repeat, median (min..max).`,
    '',
  );
  const rows: string[][] = [];
  for (const backend of backends) {
    for (const mode of ['off', 'two-calls', 'one-call'] as const) {
      const of = cells.filter((cell) => cell.backend === backend && cell.mode === mode);
      if (of.length === 0) continue;
      const p50 = (events: number) =>
        median(of.filter((cell) => cell.events === events).map((cell) => cell.p50Us));
      const ratios = of
        .filter((cell) => cell.events === 1_000)
        .map((big) => {
          const small = of.find((cell) => cell.events === 4 && cell.repeat === big.repeat);
          return big.p50Us / (small?.p50Us ?? Number.NaN);
        });
      const ratio = summarize(ratios);
      const big = of.find((cell) => cell.events === 1_000);
      const small = of.find((cell) => cell.events === 4);
      rows.push([
        backend === 'sqlite' ? 'sqlite FULL' : backend,
        modeLabel[mode],
        ...sizes.map((size) => p50(size.events).toFixed(0)),
        small === undefined ? '–' : `${small.readsPerLoad}`,
        big === undefined ? '–' : `${big.readsPerLoad} / ${big.eventsFoldedPerLoad}`,
        formatSummary(ratio, formatRatio),
        mode === 'off' ? 'no goal' : ratio.median <= goalRatio ? 'met' : 'missed',
      ]);
    }
  }
  lines.push(
    markdownTable(
      [
        'backend',
        'snapshots',
        '4 events p50 µs',
        '102 events p50 µs',
        '1,000 events p50 µs',
        '4-event load: store calls',
        '1,000-event load: store calls / events folded',
        '1,000 ÷ 4',
        `goal ≤ ${goalRatio}× (snapshots on)`,
      ],
      rows,
      ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    ),
    '',
  );
  for (const backend of backends) {
    const pairs = sizes.map((size) => {
      const of = (mode: Mode) =>
        cells.filter(
          (cell) => cell.backend === backend && cell.mode === mode && cell.events === size.events,
        );
      const ratios = of('one-call').map((after) => {
        const before = of('two-calls').find((cell) => cell.repeat === after.repeat);
        return after.p50Us / (before?.p50Us ?? Number.NaN);
      });
      return ratios.length === 0
        ? undefined
        : `${size.events} events ${formatSummary(summarize(ratios), formatRatio)}`;
    });
    if (pairs.every((pair) => pair !== undefined)) {
      lines.push(
        `- ${backend}: after ÷ before (1 call ÷ 2 calls), paired per repeat: ${pairs.join('; ')}`,
      );
    }
  }
  for (const line of skipped) lines.push(`- ${line}`);
  return {
    id: 'p8',
    title: 'read path',
    markdown: lines.join('\n'),
    cells: [...cells],
    skipped: [...skipped],
  };
}
