// `bench:peers`: Loom against DBOS Transact on the same Postgres server, see README.md.
import { CoalescingEventStore } from '@loom/event-runtime';
import { type BenchBackend, openPostgres, type PgTarget } from './bench-backend.js';
import type { RunContext, SectionReport } from './bench-run.js';
import {
  type DbosHome,
  type DbosPeer,
  launchDbosPeer,
  type PeerSteps,
  peerStepCounts,
} from './dbos-peer.js';
import { runExecutionCell } from './execution-cell.js';
import { formatCount, formatMs, formatRatio, formatSummary } from './format-number.js';
import { interleavedSchedule } from './interleave.js';
import { roundToConcurrency } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { median, summarize } from './stats.js';
import { barChart } from './svg-chart.js';

/** The sides compared: Loom as it ships, Loom behind the coalescing store (ADR 0030), DBOS. */
export const peerVariants = ['Loom', 'Loom, coalesced 64', 'DBOS'] as const;
export type PeerVariant = (typeof peerVariants)[number];

/** The default concurrencies of `bench:peers` (closed loop: each worker awaits its result). */
export const peerConcurrencies = [16, 64] as const;

/** Both sides opened on one Postgres server: Loom on the run's schema, DBOS on its own database. */
export interface PeerSides {
  loom: BenchBackend;
  loomCoalesced: BenchBackend;
  dbos: DbosPeer;
  close(): Promise<void>;
}

/**
 * Opens Loom's Postgres store (pool of 10, as DBOS's default system-database pool) on the run's
 * schema, the same store behind a `CoalescingEventStore` (maxBatch 64), and DBOS in `dbosHome`
 * (dropped and created).
 */
export async function openPeerSides(target: PgTarget, dbosHome: DbosHome): Promise<PeerSides> {
  const loom = await openPostgres(target);
  const coalescing = new CoalescingEventStore(loom.events, { maxBatch: 64 });
  let dbos: DbosPeer;
  try {
    dbos = await launchDbosPeer(target.url, dbosHome);
  } catch (error) {
    await coalescing.close();
    await loom.close();
    throw error;
  }
  return {
    loom,
    loomCoalesced: { ...loom, events: coalescing },
    dbos,
    async close() {
      await dbos.close();
      await coalescing.close();
      await loom.close();
    },
  };
}

/** One measured cell of either side, in the units of the table. */
export interface PeerCell {
  variant: PeerVariant;
  steps: PeerSteps;
  concurrency: number;
  repeat: number;
  executions: number;
  execPerSec: number;
  machineCpuMsPerExecution: number | null;
  clientAndDbCpuMsPerExecution: number | null;
  p50Ms: number;
  p99Ms: number;
  /** What the side's own storage holds for the cell, checked against the executions run. */
  recorded: string;
}

/**
 * Runs one cell of `variant` and checks it: a Loom cell must add executions × (2n + 2) events
 * to the log, a DBOS cell must leave `executions` successful workflows and executions × n step
 * outputs in its system database; otherwise it throws.
 */
export async function runPeerCell(
  sides: PeerSides,
  variant: PeerVariant,
  spec: { cellId: string; steps: PeerSteps; concurrency: number; executions: number },
  onProgress: (done: number) => void = () => {},
): Promise<Omit<PeerCell, 'repeat'>> {
  const common = { variant, steps: spec.steps, concurrency: spec.concurrency };
  if (variant === 'DBOS') {
    const result = await sides.dbos.runCell(spec, onProgress);
    return {
      ...common,
      executions: result.operations,
      execPerSec: (result.operations * 1000) / result.wallMs,
      machineCpuMsPerExecution:
        result.machineCpuMs === null ? null : result.machineCpuMs / result.operations,
      clientAndDbCpuMsPerExecution:
        result.clientAndDbCpuMs === null ? null : result.clientAndDbCpuMs / result.operations,
      p50Ms: result.latencyMs.p50,
      p99Ms: result.latencyMs.p99,
      recorded: `${result.workflowsRecorded} workflows, ${result.stepsRecorded} step outputs`,
    };
  }
  const backend = variant === 'Loom' ? sides.loom : sides.loomCoalesced;
  const result = await runExecutionCell(
    backend,
    // The coalesced side batches in the decorator (which offers no appendBatch, so the runtime's
    // own group commit could not batch over it anyway): say so.
    {
      ...spec,
      effectMs: 0,
      ids: 'caller',
      leaseMode: 'off',
      ...(variant === 'Loom' ? {} : { groupCommit: false }),
    },
    onProgress,
  );
  return {
    ...common,
    executions: result.executions,
    execPerSec: result.execPerSec,
    machineCpuMsPerExecution: result.machineCpuMsPerExecution,
    clientAndDbCpuMsPerExecution: result.clientAndDbCpuMsPerExecution,
    p50Ms: result.latencyMs.p50,
    p99Ms: result.latencyMs.p99,
    recorded: `${result.eventsPerExecution * result.executions} events`,
  };
}

/** Loom ÷ DBOS per repeat for one variant, step count and concurrency (pairs in one repeat). */
export function pairedRatios(
  cells: readonly PeerCell[],
  variant: PeerVariant,
  steps: number,
  concurrency: number,
): number[] {
  const ratios: number[] = [];
  for (const cell of cells) {
    if (cell.variant !== variant || cell.steps !== steps || cell.concurrency !== concurrency) {
      continue;
    }
    const dbos = cells.find(
      (other) =>
        other.variant === 'DBOS' &&
        other.steps === steps &&
        other.concurrency === concurrency &&
        other.repeat === cell.repeat,
    );
    if (dbos !== undefined) ratios.push(cell.execPerSec / dbos.execPerSec);
  }
  return ratios;
}

/** The comparison: every (steps, c) group runs its three variants interleaved, rotating order. */
export async function peersSuite(context: RunContext): Promise<SectionReport> {
  const { knobs, progress } = context;
  const title = 'Loom and DBOS Transact on one Postgres server';
  if (typeof context.pg === 'string') {
    return { id: 'peers', title, markdown: '', cells: [], skipped: [context.pg] };
  }
  const concurrencies = knobs.concs ?? [...peerConcurrencies];
  const sides = await openPeerSides(context.pg, { database: knobs.dbosDatabase });
  const cells: PeerCell[] = [];
  try {
    progress.note(`DBOS Transact ${sides.dbos.version} on ${knobs.dbosDatabase}: warming up`);
    for (const variant of peerVariants) {
      for (const steps of peerStepCounts) {
        await runPeerCell(sides, variant, {
          cellId: `warm-${variant.replace(/\W/g, '')}-${steps}`,
          steps,
          concurrency: 16,
          executions: 64,
        });
      }
    }
    for (const concurrency of concurrencies) {
      const executions = roundToConcurrency(knobs.pgExecs, concurrency);
      for (const steps of peerStepCounts) {
        for (const { repeat, variant } of interleavedSchedule(peerVariants, knobs.repeats)) {
          const label = `${steps}-step c=${concurrency} ${variant} repeat ${repeat + 1}/${knobs.repeats}`;
          progress.update(label, true);
          const cell = await runPeerCell(
            sides,
            variant,
            {
              cellId: `p-${variant.replace(/\W/g, '')}-${steps}-${concurrency}-${repeat}`,
              steps,
              concurrency,
              executions,
            },
            (done) => progress.update(`${label}: ${done}/${executions}`),
          );
          cells.push({ ...cell, repeat });
        }
      }
    }
  } finally {
    await sides.close();
  }
  const chart = context.chart('peers.svg', peersChart(cells, concurrencies));
  return {
    id: 'peers',
    title,
    markdown: `${peersTable(cells, concurrencies)}\n\n![Loom and DBOS executions per second](${chart})\n`,
    cells,
    skipped: [],
    summary: summaryLines(cells, concurrencies),
  };
}

/** The Markdown table: one row per variant, step count and concurrency. */
export function peersTable(cells: readonly PeerCell[], concurrencies: readonly number[]): string {
  const rows: string[][] = [];
  for (const steps of peerStepCounts) {
    for (const concurrency of concurrencies) {
      for (const variant of peerVariants) {
        const mine = cells.filter(
          (cell) =>
            cell.variant === variant && cell.steps === steps && cell.concurrency === concurrency,
        );
        if (mine.length === 0) continue;
        const ratios = pairedRatios(cells, variant, steps, concurrency);
        const cpu = (pick: (cell: PeerCell) => number | null) => {
          const values = mine.map(pick).filter((value): value is number => value !== null);
          return values.length === 0 ? 'n/a' : formatMs(median(values));
        };
        rows.push([
          `${steps}`,
          `${concurrency}`,
          variant,
          formatSummary(summarize(mine.map((cell) => cell.execPerSec)), formatCount),
          variant === 'DBOS' || ratios.length === 0
            ? ''
            : formatSummary(summarize(ratios), formatRatio),
          cpu((cell) => cell.machineCpuMsPerExecution),
          cpu((cell) => cell.clientAndDbCpuMsPerExecution),
          `${formatMs(median(mine.map((cell) => cell.p50Ms)))} / ${formatMs(median(mine.map((cell) => cell.p99Ms)))}`,
        ]);
      }
    }
  }
  return markdownTable(
    [
      'steps',
      'c',
      'side',
      'executions/s median (min..max)',
      '÷ DBOS, same repeat',
      'machine CPU ms/execution',
      'node + pg CPU ms/execution',
      'p50 / p99 ms',
    ],
    rows,
    ['right', 'right', 'left', 'right', 'right', 'right', 'right', 'right'],
  );
}

/** Bars of median executions/s, one group per step count and concurrency. */
export function peersChart(cells: readonly PeerCell[], concurrencies: readonly number[]): string {
  return barChart({
    title: 'Loom and DBOS Transact: executions/s, median',
    yTitle: 'executions/s',
    groups: peerStepCounts.flatMap((steps) =>
      concurrencies.map((concurrency) => ({
        label: `${steps}-step, c = ${concurrency}`,
        bars: peerVariants.map((variant) => {
          const rates = cells
            .filter(
              (cell) =>
                cell.variant === variant &&
                cell.steps === steps &&
                cell.concurrency === concurrency,
            )
            .map((cell) => cell.execPerSec);
          return { name: variant, value: rates.length === 0 ? null : median(rates) };
        }),
      })),
    ),
    format: formatCount,
  });
}

function summaryLines(cells: readonly PeerCell[], concurrencies: readonly number[]): string[] {
  const lines: string[] = [];
  for (const steps of peerStepCounts) {
    for (const concurrency of concurrencies) {
      const parts = peerVariants
        .filter((variant) => variant !== 'DBOS')
        .map((variant) => {
          const ratios = pairedRatios(cells, variant, steps, concurrency);
          return ratios.length === 0
            ? `${variant}: no pairs`
            : `${variant} ÷ DBOS ${formatSummary(summarize(ratios), formatRatio)}`;
        });
      lines.push(`peers ${steps}-step c = ${concurrency}: ${parts.join('; ')}`);
    }
  }
  return lines;
}
