/**
 * `pnpm --filter @loom/bench-throughput bench:history` (issue 14, history growth): an execution
 * of 100,001 events (50,000 steps, then a wait for a signal) on SQLite and on Postgres, resumed
 * by a fresh runtime with and without snapshots, A B A B. Reports per variant the median (and
 * min..max) of the resume's wall time (resume call until the execution is suspended again) and
 * of its heap growth (peak `heapUsed` sampled every millisecond, minus the figure after a GC
 * before it), and the events the resume read. On demand only: building the history takes a while.
 *
 * Knobs: LOOM_HISTORY_STEPS (default 50,000), LOOM_HISTORY_REPEATS (default 5),
 * LOOM_BENCH_PG_URL (default postgres://root@127.0.0.1:5432/test; unreachable: Postgres skipped).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventEnvelope, EventStore, Flow, SnapshotStore } from '@loom/event-runtime';
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import { CountingEventStore } from '@loom/event-runtime/testing';
import {
  type BenchBackend,
  dropPostgres,
  openPostgres,
  openSqlite,
  reachPostgres,
} from './bench-backend.js';
import { collectGarbage } from './closed-loop.js';
import { describeMachine, machineMarkdown } from './machine.js';
import { markdownTable } from './markdown-table.js';
import { summarize } from './stats.js';

const steps = Number(process.env.LOOM_HISTORY_STEPS ?? 50_000);
const repeats = Number(process.env.LOOM_HISTORY_REPEATS ?? 5);
const pgUrl = process.env.LOOM_BENCH_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const appendChunk = 998; // even, and two more still fit eventsPerAppendMax

const flow: Flow<null, number> = {
  name: 'history-growth',
  run: async (ctx) => {
    let sum = 0;
    for (let index = 0; index < steps; index++) sum += await ctx.step(`s-${index}`, () => index);
    await ctx.waitForSignal('go');
    return sum;
  },
};

/** Counts the events each read returns. */
class EventCounting extends CountingEventStore {
  eventsRead = 0;
  override async read(executionId: string, options?: Parameters<EventStore['read']>[1]) {
    const events = await super.read(executionId, options);
    this.eventsRead += events.length;
    return events;
  }
}

/** Writes the history straight to the store: the log a crashed run of 50,000 steps leaves. */
async function writeHistory(events: EventStore, id: string): Promise<number> {
  let batch: EventEnvelope[] = [
    {
      executionId: id,
      sequence: 0,
      type: 'execution.started',
      payload: { flow: flow.name, version: null, input: null },
    },
  ];
  let written = 0;
  for (let index = 0; index < steps; index++) {
    const name = `s-${index}`;
    batch.push(
      { executionId: id, sequence: 1 + 2 * index, type: 'step.started', payload: { index, name } },
      {
        executionId: id,
        sequence: 2 + 2 * index,
        type: 'step.completed',
        payload: { index, name, result: index },
      },
    );
    if (batch.length >= appendChunk) {
      await events.append(batch);
      written += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) await events.append(batch);
  return written + batch.length;
}

interface Sample {
  wallMs: number;
  heapMiB: number;
  eventsRead: number;
}

/** One resume by a fresh runtime, until the execution is suspended again. */
async function resumeOnce(
  backend: BenchBackend,
  id: string,
  snapshots: SnapshotStore | undefined,
): Promise<Sample> {
  const events = new EventCounting(backend.events);
  const runtime = createKernelRuntime({
    store: events,
    ...(snapshots === undefined ? {} : { snapshots, snapshotEvery: 1_000 }),
    flows: [flow as Flow<never, unknown>],
    leaseMode: 'off',
    inlineWaitMs: 0,
  });
  collectGarbage();
  const baseline = process.memoryUsage().heapUsed;
  let peak = baseline;
  const started = performance.now();
  await runtime.resume(id);
  while (runtime.activeExecutions.includes(id)) {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const wallMs = performance.now() - started;
  peak = Math.max(peak, process.memoryUsage().heapUsed);
  await runtime.idle();
  await runtime.shutdown();
  return { wallMs, heapMiB: (peak - baseline) / 1024 ** 2, eventsRead: events.eventsRead };
}

async function measure(backend: BenchBackend, label: string): Promise<string[][]> {
  if (typeof backend.snapshots === 'string') throw new Error(backend.snapshots);
  const snapshots = backend.snapshots;
  const plain = `history-plain-${process.pid}`;
  const snapped = `history-snap-${process.pid}`;
  process.stdout.write(`${label}: writing two histories of ${2 * steps + 1} events…\n`);
  const size = await writeHistory(backend.events, plain);
  await writeHistory(backend.events, snapped);
  // The first resume with snapshots leaves one near the tip (the checkpoint at suspension).
  await resumeOnce(backend, snapped, snapshots);
  const samples: Record<'without' | 'with', Sample[]> = { without: [], with: [] };
  for (let round = 0; round < repeats; round++) {
    for (const variant of round % 2 === 0
      ? (['without', 'with'] as const)
      : (['with', 'without'] as const)) {
      const sample =
        variant === 'with'
          ? await resumeOnce(backend, snapped, snapshots)
          : await resumeOnce(backend, plain, undefined);
      samples[variant].push(sample);
      process.stdout.write(
        `${label} ${variant} snapshots: ${sample.wallMs.toFixed(0)} ms, +${sample.heapMiB.toFixed(1)} MiB, ${sample.eventsRead} events read\n`,
      );
    }
  }
  const row = (variant: 'without' | 'with') => {
    const wall = summarize(samples[variant].map((sample) => sample.wallMs));
    const heap = summarize(samples[variant].map((sample) => sample.heapMiB));
    return [
      label,
      `${size.toLocaleString('en-US')}`,
      variant,
      `${wall.median.toFixed(0)} (${wall.min.toFixed(0)}..${wall.max.toFixed(0)})`,
      `${heap.median.toFixed(1)} (${heap.min.toFixed(1)}..${heap.max.toFixed(1)})`,
      `${samples[variant][0]?.eventsRead.toLocaleString('en-US')}`,
    ];
  };
  const without = summarize(samples.without.map((sample) => sample.wallMs)).median;
  const withSnapshots = summarize(samples.with.map((sample) => sample.wallMs)).median;
  process.stdout.write(`${label}: without ÷ with = ${(without / withSnapshots).toFixed(2)}\n`);
  return [row('without'), row('with')];
}

const directory = mkdtempSync(join(tmpdir(), 'loom-bench-history-'));
const load = loadavg()[0]?.toFixed(1);
const rows: string[][] = [];
let postgresVersion: string | null = null;
try {
  const sqlite = openSqlite(directory, 'history', 'FULL');
  try {
    rows.push(...(await measure(sqlite, 'SQLite (FULL)')));
  } finally {
    await sqlite.close();
  }
  const target = await reachPostgres(pgUrl);
  if (typeof target === 'string') process.stdout.write(`Postgres skipped: ${target}\n`);
  else {
    postgresVersion = target.version;
    const postgres = await openPostgres(target);
    try {
      rows.push(...(await measure(postgres, 'Postgres')));
    } finally {
      await postgres.close();
      await dropPostgres(target);
    }
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
process.stdout.write(
  `\n${machineMarkdown(describeMachine(postgresVersion, null), date)}\nload average (1 min) at start: ${load}, at end: ${loadavg()[0]?.toFixed(1)}\n\n`,
);
process.stdout.write(
  `${markdownTable(
    [
      'Backend',
      'Events',
      'Snapshots',
      'Resume ms, median (min..max)',
      'Heap growth MiB, median (min..max)',
      'Events read',
    ],
    rows,
  )}\n`,
);
