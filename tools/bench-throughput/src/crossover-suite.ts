import type { RunContext, SectionReport } from './bench-run.js';
import {
  crossoverConcurrency as concurrency,
  crossover,
  crossoverExecutions,
  writeShare,
} from './crossover-math.js';
import { type ExecutionCellResult, runExecutionCell } from './execution-cell.js';
import { backendOpener, backendSkip, executionsFor } from './execution-suite.js';
import { formatCount, formatMs, formatPercent, formatSummary } from './format-number.js';
import { interleavedSchedule } from './interleave.js';
import type { Backend } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { median, summarize } from './stats.js';
import { lineChart } from './svg-chart.js';

export const effectLatenciesMs = [0, 1, 5, 25, 100];

interface Cell {
  backend: Backend;
  effectMs: number;
  repeat: number;
  result: ExecutionCellResult;
}

/** Average number of executions inside a write (or an effect): summed time ÷ wall time. */
function inFlight(
  results: readonly ExecutionCellResult[],
  key: 'appendMsPerExecution' | 'effectMsPerExecution',
): string {
  return median(results.map((result) => (result[key] * result.execPerSec) / 1000)).toFixed(1);
}

/** P11: 1-step flows with effect latencies 0–100 ms at c = 32, time split writes vs effects. */
export async function crossoverSuite(context: RunContext): Promise<SectionReport> {
  const { knobs, progress } = context;
  const cells: Cell[] = [];
  const skipped: string[] = [];
  const backends: Backend[] = [];
  for (const kind of ['sqlite', 'postgres'] as const) {
    const skip = backendSkip(context, kind);
    if (skip !== undefined) {
      skipped.push(skip);
      continue;
    }
    backends.push(kind);
    const opener = await backendOpener(context, kind, 'p11-crossover');
    const backend = await opener.cell();
    try {
      for (const { repeat, variant: effectMs } of interleavedSchedule(
        effectLatenciesMs,
        knobs.repeats,
      )) {
        const executions = crossoverExecutions(executionsFor(context, kind), effectMs);
        const label = `P11 ${kind} effect ${effectMs} ms repeat ${repeat + 1}/${knobs.repeats}`;
        progress.update(label, true);
        const result = await runExecutionCell(
          backend,
          {
            cellId: `p11-${kind}-${effectMs}ms-r${repeat}`,
            steps: 1,
            effectMs,
            concurrency,
            executions,
            ids: 'caller',
            leaseMode: 'off',
          },
          (done) => progress.update(`${label}: ${done}/${executions} executions`),
        );
        cells.push({ backend: kind, effectMs, repeat, result });
      }
    } finally {
      await opener.shared?.close();
    }
  }
  const lines: string[] = ['## P11: effect/write crossover', ''];
  lines.push(
    '```sh',
    `${context.command}   # the whole run`,
    `${context.commandFor('p11')}   # this section alone`,
    '```',
    '',
  );
  lines.push(
    `1-step flows at c = ${concurrency}, effect latency 0 (returns at once), 1, 5, 25 and 100 ms (a timer); SQLite FULL and Postgres. Write time is the time executions spent inside \`store.append\` (a timing wrapper around the store, pool queueing included), effect time the time inside the effect; both summed over executions and divided by executions. Write share = write ÷ (write + effect). In flight = those sums ÷ wall time: how many executions were, on average, inside a write or inside an effect (at most 32 together; on SQLite writes are synchronous, so writes in flight is the share of the event loop spent committing). ${knobs.repeats} interleaved repeats, rotating order; medians (exec/s with min..max).`,
    '',
  );
  const rows: string[][] = [];
  const verdicts: string[] = [];
  const series: { name: string; values: (number | null)[] }[] = [];
  for (const backend of backends) {
    const points: { effectMs: number; share: number }[] = [];
    for (const effectMs of effectLatenciesMs) {
      const results = cells
        .filter((cell) => cell.backend === backend && cell.effectMs === effectMs)
        .map((cell) => cell.result);
      if (results.length === 0) continue;
      const share = median(results.map(writeShare));
      points.push({ effectMs, share });
      rows.push([
        backend === 'sqlite' ? 'sqlite FULL' : backend,
        String(effectMs),
        formatCount(results[0]?.executions ?? 0),
        formatSummary(summarize(results.map((result) => result.execPerSec)), formatCount),
        formatMs(median(results.map((result) => result.latencyMs.p50))),
        formatMs(median(results.map((result) => result.appendMsPerExecution))),
        formatMs(median(results.map((result) => result.effectMsPerExecution))),
        formatPercent(share),
        `${inFlight(results, 'appendMsPerExecution')} / ${inFlight(results, 'effectMsPerExecution')}`,
      ]);
    }
    series.push({
      name: backend === 'sqlite' ? 'sqlite FULL' : backend,
      values: effectLatenciesMs.map(
        (effectMs) => (points.find((point) => point.effectMs === effectMs)?.share ?? 0) * 100,
      ),
    });
    verdicts.push(
      `- ${backend === 'sqlite' ? 'SQLite FULL' : 'Postgres'}: crossover ${crossover(points)}.`,
    );
  }
  lines.push(
    markdownTable(
      [
        'backend',
        'effect ms',
        'executions per cell',
        'exec/s',
        'p50 ms',
        'write ms/exec',
        'effect ms/exec',
        'write share',
        'in flight: writes / effects',
      ],
      rows,
      ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
    '',
    ...verdicts,
    '',
  );
  if (backends.length > 0) {
    lines.push(
      `![P11 write share](${context.chart(
        'bench-p11-crossover.svg',
        lineChart({
          title: 'P11: share of execution time spent writing (c = 32)',
          xTitle: 'effect latency (ms)',
          yTitle: 'write share (%)',
          xLabels: effectLatenciesMs.map(String),
          series,
        }),
      )})`,
      '',
    );
  }
  for (const line of skipped) lines.push(`- ${line}`);
  return {
    id: 'p11',
    title: 'effect/write crossover',
    markdown: lines.join('\n'),
    cells: [...cells],
    skipped: [...skipped],
  };
}
