import { type BenchBackend, openMemory, openPostgres, openSqlite } from './bench-backend.js';
import { eventsPerExecution } from './bench-flows.js';
import type { RunContext, SectionReport } from './bench-run.js';
import { type ExecutionCellResult, runExecutionCell } from './execution-cell.js';
import { formatCount, formatMs, formatSummary } from './format-number.js';
import { interleavedSchedule } from './interleave.js';
import { type Backend, roundToConcurrency } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { median, summarize } from './stats.js';
import { lineChart } from './svg-chart.js';

/** P3/P4/P5 concurrency levels (executions in flight) unless LOOM_BENCH_CONCS overrides them. */
export const executionConcurrencies = [16, 64, 256];
const stepCounts = [1, 3];

/** The goals PERFORMANCE.md sets for 1-step executions, in exec/s. */
const rateGoals: Record<Backend, { value: number; why: string }> = {
  memory: { value: 100_000, why: 'P5: ≥ 100K 1-step exec/s' },
  sqlite: { value: 2_500, why: 'P4: ≥ 5 × the ~500/s agent-graph SQLite reference' },
  postgres: { value: 3_500, why: 'P3: ≥ 5 × the ~700/s reference library' },
};
const postgresCpuGoalMs = 0.5;

interface Cell {
  backend: Backend;
  steps: number;
  concurrency: number;
  repeat: number;
  result: ExecutionCellResult;
}

/**
 * Opens a backend for a suite: durable ones once (the suite counts rows before and after each
 * cell), memory afresh per cell so the heap a cell inherits never grows.
 */
export async function backendOpener(context: RunContext, kind: Backend, name: string) {
  if (kind === 'memory') {
    return { shared: undefined, cell: async () => openMemory() };
  }
  const shared: BenchBackend =
    kind === 'sqlite'
      ? openSqlite(context.tmpDir, name, 'FULL')
      : await openPostgres(context.pg as Exclude<RunContext['pg'], string>);
  return { shared, cell: async () => shared };
}

/** Why a backend cannot run in this run, or undefined when it can. */
export function backendSkip(context: RunContext, kind: Backend): string | undefined {
  if (!context.knobs.backends.includes(kind)) return `${kind}: not in LOOM_BENCH_BACKENDS`;
  if (kind === 'postgres' && typeof context.pg === 'string') {
    return `postgres: skipped, cannot reach the server (${context.pg})`;
  }
  return undefined;
}

export function executionsFor(context: RunContext, kind: Backend): number {
  const { knobs } = context;
  return kind === 'memory' ? knobs.execs : kind === 'sqlite' ? knobs.sqliteExecs : knobs.pgExecs;
}

/** P3 (Postgres), P4 (SQLite FULL), P5 (memory): no-op flows of 1 and 3 steps. */
export async function executionSuite(context: RunContext): Promise<SectionReport> {
  const { knobs, progress } = context;
  const concurrencies = knobs.concs ?? executionConcurrencies;
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
    const opener = await backendOpener(context, kind, 'p3-executions');
    try {
      const warm = await opener.cell();
      await runExecutionCell(
        warm,
        {
          cellId: `p3-warm-${kind}`,
          steps: 1,
          effectMs: 0,
          concurrency: 16,
          executions: 480,
          ids: 'caller',
          leaseMode: 'off',
        },
        () => {},
      );
      if (opener.shared === undefined) await warm.close();
      const variants = stepCounts.flatMap((steps) =>
        concurrencies.map((concurrency) => ({ steps, concurrency })),
      );
      for (const { repeat, variant } of interleavedSchedule(variants, knobs.repeats)) {
        const { steps, concurrency } = variant;
        const executions = roundToConcurrency(executionsFor(context, kind), concurrency);
        const label = `P3-5 ${kind} ${steps}-step c=${concurrency} repeat ${repeat + 1}/${knobs.repeats}`;
        progress.update(label, true);
        const backend = await opener.cell();
        try {
          const result = await runExecutionCell(
            backend,
            {
              cellId: `p3-${kind}-${steps}s-c${concurrency}-r${repeat}`,
              steps,
              effectMs: 0,
              concurrency,
              executions,
              ids: 'caller',
              leaseMode: 'off',
            },
            (done) => progress.update(`${label}: ${done}/${executions} executions`),
          );
          cells.push({ backend: kind, steps, concurrency, repeat, result });
        } finally {
          if (opener.shared === undefined) await backend.close();
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
  const lines: string[] = ['## P3, P4, P5: durable executions', ''];
  lines.push(
    '```sh',
    `${context.command}   # the whole run`,
    `${context.commandFor('p3')}   # this section alone`,
    '```',
    '',
  );
  lines.push(
    `No-op flows of n = 1 and 3 steps (2n + 2 events each, counted in the log after every cell), c executions in flight, caller-chosen ids, no leases (a start shorter than the lazy grace never touches a lease store anyway), input a 256-byte JSON object. SQLite is \`synchronous=FULL\`. ${knobs.repeats} interleaved repeats per cell, rotating order; rates are median (min..max); latencies are start → result, medians of the per-repeat percentiles. The runtime's group commit is on (its default, ADR 0040). Store calls, appends (one per execution barrier) and store writes (plain appends, batches and transactions: what the store was sent) are counted by CountingEventStore; Postgres round trips by the store's own statement counter; CPU per execution three ways: the whole machine's from /proc/stat (client, Postgres and anything else running on the box: the figure PERFORMANCE.md names), the Node process plus the Postgres server processes from /proc/<pid>/stat (the same cost without other jobs on a shared box), and the Node process alone in µs (on memory, the kernel's own cost).`,
    '',
  );
  const rows: string[][] = [];
  for (const backend of backends) {
    for (const steps of stepCounts) {
      for (const concurrency of concurrencies) {
        const of = cells.filter(
          (cell) =>
            cell.backend === backend && cell.steps === steps && cell.concurrency === concurrency,
        );
        if (of.length === 0) continue;
        const results = of.map((cell) => cell.result);
        const rate = summarize(results.map((result) => result.execPerSec));
        const med = (pick: (result: ExecutionCellResult) => number | null) => {
          const values = results.map(pick).filter((value): value is number => value !== null);
          return values.length === 0 ? null : median(values);
        };
        const calls = med((result) => result.storeCallsPerExecution) as number;
        const appends = med((result) => result.appendsPerExecution) as number;
        const writes = med((result) => result.writesPerExecution) as number;
        const roundTrips = med((result) => result.roundTripsPerExecution);
        const cpu = med((result) => result.machineCpuMsPerExecution);
        const clientAndDb = med((result) => result.clientAndDbCpuMsPerExecution);
        const goal = rateGoals[backend];
        const verdicts: string[] = [];
        if (steps === 1) {
          verdicts.push(
            `${rate.median >= goal.value ? 'met' : 'missed'} ≥ ${formatCount(goal.value)}/s`,
          );
        }
        // The barriers an execution pays (round trips when it runs alone); with group commit the
        // writes are fewer, shared with the executions in flight beside it.
        verdicts.push(`${appends <= steps + 1 ? 'met' : 'missed'} ≤ ${steps + 1} appends`);
        if (backend === 'postgres' && cpu !== null) {
          verdicts.push(
            `${cpu <= postgresCpuGoalMs ? 'met' : 'missed'} CPU ≤ ${postgresCpuGoalMs} ms`,
          );
        }
        rows.push([
          backend === 'sqlite' ? 'sqlite FULL' : backend,
          `${steps}-step`,
          String(concurrency),
          formatCount(results[0]?.executions ?? 0),
          formatSummary(rate, formatCount),
          formatMs(med((result) => result.latencyMs.p50) as number),
          formatMs(med((result) => result.latencyMs.p99) as number),
          `${formatCount(med((result) => result.eventsPerExecution) as number)} (= ${eventsPerExecution(steps)})`,
          calls.toFixed(2),
          appends.toFixed(2),
          writes.toFixed(2),
          roundTrips === null ? '–' : roundTrips.toFixed(2),
          cpu === null ? '–' : cpu.toFixed(3),
          clientAndDb === null ? '–' : clientAndDb.toFixed(3),
          formatCount(med((result) => result.processCpuUsPerExecution) as number),
          verdicts.join('; '),
        ]);
      }
    }
  }
  lines.push(
    markdownTable(
      [
        'backend',
        'flow',
        'c',
        'executions per cell',
        'exec/s',
        'p50 ms',
        'p99 ms',
        'events/exec in the log',
        'store calls/exec',
        'appends/exec',
        'store writes/exec',
        'pg round trips/exec',
        'machine CPU ms/exec',
        'node + pg CPU ms/exec',
        'node CPU µs/exec',
        'goals',
      ],
      rows,
      [
        'left',
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
        'right',
        'right',
        'left',
      ],
    ),
    '',
  );
  const seriesFor = (backend: Backend) =>
    stepCounts.map((steps) => ({
      name: `${backend === 'sqlite' ? 'sqlite FULL' : backend}, ${steps}-step`,
      values: concurrencies.map((concurrency) => {
        const rates = cells
          .filter(
            (cell) =>
              cell.backend === backend && cell.steps === steps && cell.concurrency === concurrency,
          )
          .map((cell) => cell.result.execPerSec);
        return rates.length === 0 ? null : median(rates);
      }),
    }));
  const durable = backends.filter((backend) => backend !== 'memory');
  if (durable.length > 0) {
    lines.push(
      `![P3/P4 executions per second](${context.chart(
        'bench-p3-p4-executions.svg',
        lineChart({
          title: 'P3/P4: durable no-op executions',
          xTitle: 'executions in flight (c)',
          yTitle: 'exec/s (median)',
          xLabels: concurrencies.map(String),
          series: durable.flatMap(seriesFor),
        }),
      )})`,
      '',
    );
  }
  if (backends.includes('memory')) {
    lines.push(
      `![P5 in-memory executions per second](${context.chart(
        'bench-p5-memory.svg',
        lineChart({
          title: 'P5: in-memory kernel, no-op executions',
          xTitle: 'executions in flight (c)',
          yTitle: 'exec/s (median)',
          xLabels: concurrencies.map(String),
          series: seriesFor('memory'),
        }),
      )})`,
      '',
    );
  }
  for (const line of skipped) lines.push(`- ${line}`);
  return {
    id: 'p3',
    title: 'durable executions',
    markdown: lines.join('\n'),
    cells: [...cells],
    skipped: [...skipped],
  };
}
