import type { LeaseMode } from '@loom/event-runtime';
import type { RunContext, SectionReport } from './bench-run.js';
import { type ExecutionCellResult, runExecutionCell } from './execution-cell.js';
import { backendOpener, backendSkip, executionsFor } from './execution-suite.js';
import { formatCount, formatPercent, formatRatio, formatSummary } from './format-number.js';
import { interleavedSchedule } from './interleave.js';
import { type Backend, type IdStyle, roundToConcurrency, type Shape } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { median, summarize } from './stats.js';
import { barChart } from './svg-chart.js';

export const leaseConcurrencies = [16, 64, 256];
const modes: readonly LeaseMode[] = ['off', 'eager', 'lazy'];
/** PERFORMANCE.md P9: lazy overhead on durable stores. */
const lazyGoal: Record<Shape, number> = { noop: 0.05, io: 0.02 };

interface Cell {
  backend: Backend;
  concurrency: number;
  shape: Shape;
  ids: IdStyle;
  mode: LeaseMode;
  repeat: number;
  result: ExecutionCellResult;
}

/** Overhead of a mode against off, on medians: (off − mode) ÷ off. Negative: it ran faster. */
export function overhead(offMedian: number, modeMedian: number): number {
  return (offMedian - modeMedian) / offMedian;
}

/** One paired repeat: lazy and off rates of the same cell and repeat. */
export interface LazyPair {
  shape: Shape;
  lazy: number;
  off: number;
  /** acquireMany + releaseMany of the lazy cell. */
  lazyLeaseCalls: number;
}

/**
 * The line `bench:lease` ends with for one backend: lazy's overhead against off, 1 − lazy ÷ off
 * per paired repeat, as median (min..max) over every cell of the backend, then per shape, and
 * the lease-store calls lazy made (0 while executions finish within the grace).
 */
export function lazySummaryLine(
  backend: Backend,
  pairs: readonly LazyPair[],
  shapeLabel: (shape: Shape) => string,
): string {
  const name = backend === 'sqlite' ? 'sqlite FULL' : backend;
  if (pairs.length === 0) return `P9 lazy vs off, ${name}: no paired repeats ran`;
  const share = (pair: LazyPair) => 1 - pair.lazy / pair.off;
  const all = summarize(pairs.map(share));
  const shapes = [...new Set(pairs.map((pair) => pair.shape))].map((shape) => {
    const of = pairs.filter((pair) => pair.shape === shape).map(share);
    const goal = backend === 'memory' ? '' : ` (goal ≤ ${lazyGoal[shape] * 100} %)`;
    return `${shapeLabel(shape)} ${formatPercent(median(of))}${goal}`;
  });
  const calls = pairs.reduce((sum, pair) => sum + pair.lazyLeaseCalls, 0);
  return `P9 lazy vs off, ${name}: overhead ${formatSummary(all, formatPercent)} over ${pairs.length} paired repeats; ${shapes.join(', ')}; lazy lease-store calls: ${formatCount(calls)}`;
}

/** P9: heartbeat off / eager / lazy × backends × c × no-op and I/O-bound × caller and minted ids. */
export async function leaseSuite(context: RunContext): Promise<SectionReport> {
  const { knobs, progress } = context;
  const concurrencies = knobs.concs ?? leaseConcurrencies;
  const cells: Cell[] = [];
  const skipped: string[] = [];
  const backends: Backend[] = [];
  for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
    const skip = backendSkip(context, kind);
    if (skip !== undefined) {
      skipped.push(skip);
      continue;
    }
    const opener = await backendOpener(context, kind, 'p9-lease');
    try {
      const probe = await opener.cell();
      if (typeof probe.leases === 'string') {
        skipped.push(`${kind}: ${probe.leases}`);
        if (opener.shared === undefined) await probe.close();
        continue;
      }
      backends.push(kind);
      await runExecutionCell(
        probe,
        {
          cellId: `p9-warm-${kind}`,
          steps: 1,
          effectMs: 0,
          concurrency: 16,
          executions: 480,
          ids: 'caller',
          leaseMode: 'eager',
        },
        () => {},
      );
      if (opener.shared === undefined) await probe.close();
      for (const concurrency of concurrencies) {
        for (const shape of knobs.shapes) {
          for (const ids of knobs.ids) {
            const requested = shape === 'io' ? knobs.ioExecs : executionsFor(context, kind);
            const executions = roundToConcurrency(requested, concurrency);
            for (const { repeat, variant: mode } of interleavedSchedule(modes, knobs.repeats)) {
              const label = `P9 ${kind} c=${concurrency} ${shape} ${ids} ids, leases ${mode}, repeat ${repeat + 1}/${knobs.repeats}`;
              progress.update(label, true);
              const backend = await opener.cell();
              try {
                const result = await runExecutionCell(
                  backend,
                  {
                    cellId: `p9-${kind}-c${concurrency}-${shape}-${ids}-${mode}-r${repeat}`,
                    steps: 1,
                    effectMs: shape === 'io' ? knobs.ioMs : 0,
                    concurrency,
                    executions,
                    ids,
                    leaseMode: mode,
                  },
                  (done) => progress.update(`${label}: ${done}/${executions} executions`),
                );
                cells.push({ backend: kind, concurrency, shape, ids, mode, repeat, result });
              } finally {
                if (opener.shared === undefined) await backend.close();
              }
            }
          }
        }
      }
    } finally {
      await opener.shared?.close();
    }
  }
  return report(context, concurrencies, backends, cells, skipped);
}

function report(
  context: RunContext,
  concurrencies: readonly number[],
  backends: readonly Backend[],
  cells: readonly Cell[],
  skipped: readonly string[],
): SectionReport {
  const { knobs } = context;
  const lines: string[] = ['## P9: lease overhead', ''];
  lines.push('```sh', context.command, '```', '');
  if (!knobs.leaseFull) {
    lines.push(
      `The quick default: c = ${concurrencies.join(', ')}, ${knobs.ids.join(' and ')} ids, ${knobs.repeats} repeats of smaller cells (knobs you set win). \`LOOM_BENCH_LEASE_FULL=1\` runs the whole sweep (c = 16, 64, 256, caller and minted ids, 5 repeats; ~20 minutes on 2 cores).`,
      '',
    );
  }
  lines.push(
    `1-step flows, no-op effect or an I/O-bound one (a ${knobs.ioMs} ms timer), c executions in flight, caller-chosen or minted ids; heartbeat \`leaseMode\` off, eager (acquire before the first append, release at settle, both group-committed per event-loop turn) and lazy (the default: a start leases only after driving for ttl/3 = 10 s). The three modes run interleaved within each repeat, in a rotating order; ${knobs.repeats} repeats. Rates: median (min..max). Overhead = (off − mode) ÷ off on the medians; the lazy ratio is lazy ÷ off paired per repeat, median (min..max). Lease calls: acquireMany + releaseMany per cell (median).`,
    '',
  );
  const rows: string[][] = [];
  const pairsOf = new Map<Backend, LazyPair[]>();
  const groups: { label: string; bars: { name: string; value: number | null }[] }[] = [];
  for (const backend of backends) {
    for (const concurrency of concurrencies) {
      for (const shape of knobs.shapes) {
        for (const ids of knobs.ids) {
          const of = (mode: LeaseMode) =>
            cells.filter(
              (cell) =>
                cell.backend === backend &&
                cell.concurrency === concurrency &&
                cell.shape === shape &&
                cell.ids === ids &&
                cell.mode === mode,
            );
          const rate = (mode: LeaseMode) =>
            summarize(of(mode).map((cell) => cell.result.execPerSec));
          const calls = (mode: LeaseMode) =>
            median(
              of(mode).map(
                (cell) => cell.result.leaseCalls.acquireMany + cell.result.leaseCalls.releaseMany,
              ),
            );
          if (of('off').length === 0) continue;
          const off = rate('off');
          const eager = rate('eager');
          const lazy = rate('lazy');
          const pairs: LazyPair[] = of('lazy').map((cell) => ({
            shape,
            lazy: cell.result.execPerSec,
            off:
              of('off').find((other) => other.repeat === cell.repeat)?.result.execPerSec ??
              Number.NaN,
            lazyLeaseCalls: cell.result.leaseCalls.acquireMany + cell.result.leaseCalls.releaseMany,
          }));
          pairsOf.set(backend, [...(pairsOf.get(backend) ?? []), ...pairs]);
          const lazyRatios = pairs.map((pair) => pair.lazy / pair.off);
          const lazyOverhead = overhead(off.median, lazy.median);
          const eagerOverhead = overhead(off.median, eager.median);
          const goal =
            backend === 'memory'
              ? 'no goal (memory)'
              : `${lazyOverhead <= lazyGoal[shape] ? 'met' : 'missed'} lazy ≤ ${lazyGoal[shape] * 100} %`;
          rows.push([
            backend === 'sqlite' ? 'sqlite FULL' : backend,
            String(concurrency),
            shape === 'io' ? `io ${knobs.ioMs} ms` : 'no-op',
            ids,
            formatCount(of('off')[0]?.result.executions ?? 0),
            formatSummary(off, formatCount),
            `${formatSummary(eager, formatCount)}; ${formatPercent(eagerOverhead)}`,
            `${formatSummary(lazy, formatCount)}; ${formatPercent(lazyOverhead)}`,
            formatSummary(summarize(lazyRatios), formatRatio),
            `${formatCount(calls('eager'))} / ${formatCount(calls('lazy'))}`,
            goal,
          ]);
          groups.push({
            label: `${backend} c${concurrency} ${shape} ${ids}`,
            bars: [
              { name: 'eager overhead', value: eagerOverhead * 100 },
              { name: 'lazy overhead', value: lazyOverhead * 100 },
            ],
          });
        }
      }
    }
  }
  lines.push(
    markdownTable(
      [
        'backend',
        'c',
        'effect',
        'ids',
        'executions per cell',
        'off exec/s',
        'eager exec/s; overhead',
        'lazy exec/s; overhead',
        'lazy ÷ off (paired)',
        'lease calls eager / lazy',
        'goal',
      ],
      rows,
      [
        'left',
        'right',
        'left',
        'left',
        'right',
        'right',
        'right',
        'right',
        'right',
        'right',
        'left',
      ],
    ),
    '',
  );
  if (groups.length > 0) {
    lines.push(
      `![P9 lease overhead](${context.chart(
        'bench-p9-lease.svg',
        barChart({
          title: 'P9: lease overhead against leaseMode off (median exec/s)',
          yTitle: 'overhead (%)',
          groups,
          reference: { value: 5, label: 'lazy goal, no-op (5 %)' },
          format: (value) => `${value.toFixed(0)} %`,
        }),
      )})`,
      '',
    );
  }
  for (const line of skipped) lines.push(`- ${line}`);
  const shapeLabel = (shape: Shape) => (shape === 'io' ? `io ${knobs.ioMs} ms` : 'no-op');
  return {
    id: 'p9',
    title: 'lease overhead',
    markdown: lines.join('\n'),
    cells: [...cells],
    skipped: [...skipped],
    summary: backends.map((backend) =>
      lazySummaryLine(backend, pairsOf.get(backend) ?? [], shapeLabel),
    ),
  };
}
