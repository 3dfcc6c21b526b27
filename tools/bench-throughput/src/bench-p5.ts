/**
 * P5: the kernel in memory. 1-step (and 3-step) no-op flows on `InMemoryEventStore`, c in
 * flight, caller ids, no leases, the 256-byte input: executions/s, this process's CPU per
 * execution (`process.cpuUsage`) and heap bytes allocated per execution (from V8's GC profiler:
 * what the heap grew by between collections, summed). With `LOOM_BENCH_BASELINE` (the path of
 * an older built `@loom/event-runtime` `dist/`), the same cells run on it too, interleaved in a
 * rotating order within every repeat, and a paired ratio is printed.
 *
 * `LOOM_BENCH_P5_PROFILE=cpu` or `alloc` runs one more cell per variant under the inspector's
 * CPU profiler (or the sampling heap profiler, collected objects included) and prints the top
 * functions by self time (or by bytes allocated).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GCProfiler } from 'node:v8';
import * as current from '@loom/event-runtime';
import * as currentKernel from '@loom/event-runtime/kernel';
import * as currentPostgres from '@loom/event-runtime/postgres';
import * as currentSqlite from '@loom/event-runtime/sqlite';
import pg from 'pg';
import { benchFlow, payload256 } from './bench-flows.js';
import { closedLoop, collectGarbage } from './closed-loop.js';
import { rotatingOrder } from './interleave.js';
import type { Backend } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { backendsKnob, formatNumber, intKnob, listKnob, profileKnob } from './script-knobs.js';
import { median, summarize } from './stats.js';

interface Variant {
  name: string;
  InMemoryEventStore: typeof current.InMemoryEventStore;
  createKernelRuntime: typeof currentKernel.createKernelRuntime;
  SqliteEventStore: typeof currentSqlite.SqliteEventStore;
  PostgresEventStore: typeof currentPostgres.PostgresEventStore;
}

/** Where the durable cells write: a temporary directory, and Postgres when reachable. */
interface Places {
  directory: string;
  pgUrl: string;
  admin: pg.Pool | undefined;
  schemas: string[];
}

interface Cell {
  backend: Backend;
  variant: string;
  steps: number;
  concurrency: number;
  repeat: number;
  execPerSec: number;
  cpuUsPerExec: number;
  bytesPerExec: number;
  nodePgMsPerExec: number | null;
}

async function loadVariants(): Promise<Variant[]> {
  const variants: Variant[] = [
    {
      name: 'after',
      InMemoryEventStore: current.InMemoryEventStore,
      createKernelRuntime: currentKernel.createKernelRuntime,
      SqliteEventStore: currentSqlite.SqliteEventStore,
      PostgresEventStore: currentPostgres.PostgresEventStore,
    },
  ];
  // `LOOM_BENCH_BASELINE=path` (named before), or several: `name=path,name=path`.
  const baseline = process.env.LOOM_BENCH_BASELINE;
  if (baseline === undefined || baseline === '') return variants;
  const older: Variant[] = [];
  for (const entry of baseline.split(',')) {
    const [name, path] = entry.includes('=') ? entry.split('=', 2) : ['before', entry];
    const index = (await import(pathToFileURL(`${path}/index.js`).href)) as typeof current;
    const kernel = (await import(pathToFileURL(`${path}/kernel.js`).href)) as typeof currentKernel;
    const sqlite = (await import(pathToFileURL(`${path}/sqlite.js`).href)) as typeof currentSqlite;
    const postgres = (await import(
      pathToFileURL(`${path}/postgres.js`).href
    )) as typeof currentPostgres;
    older.push({
      name: name as string,
      InMemoryEventStore: index.InMemoryEventStore,
      createKernelRuntime: kernel.createKernelRuntime,
      SqliteEventStore: sqlite.SqliteEventStore,
      PostgresEventStore: postgres.PostgresEventStore,
    });
  }
  variants.unshift(...older);
  return variants;
}

/** Heap bytes allocated while `work` runs: growth between collections, summed. */
async function allocatedBytes<T>(work: () => Promise<T>): Promise<{ result: T; bytes: number }> {
  const profiler = new GCProfiler();
  const startUsed = process.memoryUsage().heapUsed;
  profiler.start();
  const result = await work();
  const endUsed = process.memoryUsage().heapUsed;
  const { statistics } = profiler.stop();
  let bytes = 0;
  let previous = startUsed;
  for (const gc of statistics) {
    bytes += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previous);
    previous = gc.afterGC.heapStatistics.usedHeapSize;
  }
  bytes += Math.max(0, endUsed - previous);
  return { result, bytes };
}

/** A fresh store of `backend` for one cell, and how to close it (and count what it holds). */
async function openStore(
  variant: Variant,
  backend: Backend,
  places: Places,
  cellId: string,
): Promise<{ store: current.EventStore; close: () => Promise<void> }> {
  if (backend === 'memory') {
    const store = new variant.InMemoryEventStore();
    return { store, close: () => store.close() };
  }
  if (backend === 'sqlite') {
    const store = variant.SqliteEventStore.open({
      path: join(places.directory, `${cellId}.db`),
      migrate: true,
      synchronous: 'FULL',
    });
    return { store, close: () => store.close() };
  }
  const schema = `loom_p5_${Date.now().toString(36)}_${process.pid}_${places.schemas.length}`;
  places.schemas.push(schema);
  const pool = new pg.Pool({ connectionString: places.pgUrl, max: 10 });
  pool.on('error', () => {});
  const store = await variant.PostgresEventStore.open({ pool, schema });
  await store.migrate();
  return {
    store,
    close: async () => {
      await store.close();
      await pool.end();
    },
  };
}

async function runCell(
  variant: Variant,
  backend: Backend,
  places: Places,
  steps: number,
  concurrency: number,
  executions: number,
  cellId: string,
): Promise<{
  execPerSec: number;
  cpuUsPerExec: number;
  bytesPerExec: number;
  nodePgMsPerExec: number | null;
}> {
  const flow = benchFlow(steps, 0);
  const input = payload256();
  const { store, close } = await openStore(variant, backend, places, cellId);
  const errors: unknown[] = [];
  const runtime = variant.createKernelRuntime({
    store,
    leaseMode: 'off',
    onError: (error) => errors.push(error),
  });
  const { result: loop, bytes } = await allocatedBytes(() =>
    closedLoop(
      { concurrency, operations: executions, postgres: backend === 'postgres' },
      async (index) => {
        const handle = await runtime.start(flow, input, { executionId: `${cellId}-${index}` });
        await handle.result();
      },
    ),
  );
  await runtime.shutdown();
  // Every execution wrote its 2n + 2 events (its last one settled it), or the cell fails.
  const last = await store.read(`${cellId}-${executions - 1}`);
  if (errors.length > 0 || last.length !== 2 * steps + 2) {
    throw new Error(`cell ${cellId}: ${errors.length} background errors, ${String(errors[0])}`);
  }
  await close();
  return {
    execPerSec: (executions * 1000) / loop.wallMs,
    cpuUsPerExec: loop.processCpuUs / executions,
    bytesPerExec: bytes / executions,
    nodePgMsPerExec: loop.clientAndDbCpuMs === null ? null : loop.clientAndDbCpuMs / executions,
  };
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  selfSize?: number;
  children?: Array<ProfileNode | number>;
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^.*\/(packages|node_modules)\//, '$1/').replace(/^file:\/\//, '');
  return `${functionName || '(anonymous)'} ${file === '' ? '' : `${file}:${lineNumber + 1}`}`.trim();
}

async function profiled(
  variant: Variant,
  places: Places,
  kind: 'cpu' | 'alloc',
  steps: number,
  concurrency: number,
  executions: number,
): Promise<void> {
  const session = new Session();
  session.connect();
  const totals = new Map<string, number>();
  let total = 0;
  let cpuUsPerExec = 0;
  if (kind === 'cpu') {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    ({ cpuUsPerExec } = await runCell(
      variant,
      'memory',
      places,
      steps,
      concurrency,
      executions,
      `prof-c-${variant.name}`,
    ));
    const { profile } = (await session.post('Profiler.stop')) as unknown as {
      profile: { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
    };
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    // Self time of a node: the time deltas of the samples that landed in it.
    for (let index = 0; index < profile.samples.length; index++) {
      const node = byId.get(profile.samples[index] as number) as ProfileNode;
      const delta = profile.timeDeltas[index] ?? 0;
      total += delta;
      const name = frameName(node);
      totals.set(name, (totals.get(name) ?? 0) + delta);
    }
  } else {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as never);
    await runCell(
      variant,
      'memory',
      places,
      steps,
      concurrency,
      executions,
      `prof-a-${variant.name}`,
    );
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
      profile: { head: ProfileNode };
    };
    const visit = (node: ProfileNode) => {
      const size = node.selfSize ?? 0;
      total += size;
      const name = frameName(node);
      totals.set(name, (totals.get(name) ?? 0) + size);
      for (const child of node.children ?? []) visit(child as ProfileNode);
    };
    visit(profile.head);
  }
  session.disconnect();
  const top = [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(process.env.LOOM_BENCH_P5_TOP ?? 25));
  const unit = kind === 'cpu' ? 'self time' : 'bytes allocated';
  const cpuNote =
    kind === 'cpu' ? `, ${cpuUsPerExec.toFixed(1)} µs of CPU per execution under the profiler` : '';
  console.log(
    `\n${variant.name}: top functions by ${unit}, ${steps}-step, c = ${concurrency}, ${executions} executions${cpuNote}\n`,
  );
  console.log(
    markdownTable(
      [
        'function',
        'share',
        kind === 'cpu' ? 'µs of the execution (share × CPU)' : 'bytes per execution',
      ],
      top.map(([name, value]) => [
        `\`${name}\``,
        `${((100 * value) / total).toFixed(1)} %`,
        kind === 'cpu'
          ? ((value / total) * cpuUsPerExec).toFixed(2)
          : (value / executions).toFixed(0),
      ]),
    ),
  );
}

async function main(): Promise<void> {
  const executions = intKnob('LOOM_BENCH_EXECS', 20_000);
  const durableExecutions = intKnob('LOOM_BENCH_DURABLE_EXECS', 1_024);
  const repeats = intKnob('LOOM_BENCH_REPEATS', 5);
  const concs = listKnob('LOOM_BENCH_CONCS', [64]);
  const stepsList = listKnob('LOOM_BENCH_STEPS', [1]);
  const backends = backendsKnob();
  const profile = profileKnob('LOOM_BENCH_P5_PROFILE');
  const variants = await loadVariants();
  const places: Places = {
    directory: mkdtempSync(join(tmpdir(), 'loom-p5-')),
    pgUrl: process.env.LOOM_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/test',
    admin: undefined,
    schemas: [],
  };
  if (backends.includes('postgres')) {
    places.admin = new pg.Pool({ connectionString: places.pgUrl, max: 2 });
    places.admin.on('error', () => {});
  }
  try {
    await sweep(variants, backends, places, {
      executions,
      durableExecutions,
      repeats,
      concs,
      stepsList,
    });
    if (profile === 'cpu' || profile === 'alloc') {
      for (const variant of variants) {
        collectGarbage();
        await profiled(variant, places, profile, stepsList[0] ?? 1, concs[0] ?? 64, executions);
      }
    }
  } finally {
    rmSync(places.directory, { recursive: true, force: true });
    if (places.admin !== undefined) {
      for (const schema of places.schemas) {
        await places.admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      }
      await places.admin.end();
    }
  }
}

async function sweep(
  variants: Variant[],
  backends: Backend[],
  places: Places,
  knobs: {
    executions: number;
    durableExecutions: number;
    repeats: number;
    concs: number[];
    stepsList: number[];
  },
): Promise<void> {
  const { repeats, concs, stepsList } = knobs;
  const started = new Date().toISOString();
  const cells: Cell[] = [];
  // One warm-up cell per variant (JIT), not counted.
  for (const variant of variants) {
    await runCell(variant, 'memory', places, 1, 64, 2_000, `warm-${variant.name}`);
  }
  const countFor = (backend: Backend) =>
    backend === 'memory' ? knobs.executions : knobs.durableExecutions;
  for (const backend of backends) {
    for (const steps of stepsList) {
      for (const concurrency of concs) {
        for (let repeat = 0; repeat < repeats; repeat++) {
          for (const variant of rotatingOrder(variants, repeat)) {
            collectGarbage();
            const cellId = `p5-${backend}-${variant.name}-${steps}-${concurrency}-${repeat}`;
            const measured = await runCell(
              variant,
              backend,
              places,
              steps,
              concurrency,
              countFor(backend),
              cellId,
            );
            cells.push({ backend, variant: variant.name, steps, concurrency, repeat, ...measured });
            process.stderr.write(
              `${cellId}: ${measured.execPerSec.toFixed(0)} exec/s, ${measured.cpuUsPerExec.toFixed(1)} µs, ${measured.bytesPerExec.toFixed(0)} B\n`,
            );
          }
        }
      }
    }
  }
  const fmt = (values: number[], digits = 0) => {
    const { median: mid, min, max } = summarize(values);
    return `${formatNumber(mid, digits)} (${formatNumber(min, digits)}..${formatNumber(max, digits)})`;
  };
  const rows: string[][] = [];
  for (const backend of backends) {
    for (const steps of stepsList) {
      for (const concurrency of concs) {
        const of = (name: string) =>
          cells.filter(
            (c) =>
              c.backend === backend &&
              c.variant === name &&
              c.steps === steps &&
              c.concurrency === concurrency,
          );
        const base = of(variants[0]?.name ?? 'after');
        for (const variant of variants) {
          const mine = of(variant.name);
          const paired = (pick: (cell: Cell) => number) =>
            `${median(mine.map((cell, i) => pick(cell) / pick(base[i] as Cell))).toFixed(2)}×`;
          const first = variant.name === base[0]?.variant;
          const nodePg = mine.map((c) => c.nodePgMsPerExec).filter((v) => v !== null);
          rows.push([
            backend === 'sqlite' ? 'sqlite FULL' : backend,
            variant.name,
            `${steps}-step`,
            String(concurrency),
            formatNumber(countFor(backend), 0),
            fmt(mine.map((c) => c.execPerSec)),
            first ? '–' : paired((cell) => cell.execPerSec),
            fmt(
              mine.map((c) => c.cpuUsPerExec),
              1,
            ),
            first ? '–' : paired((cell) => cell.cpuUsPerExec),
            fmt(
              mine.map((c) => c.bytesPerExec / 1024),
              1,
            ),
            nodePg.length === 0 ? '–' : fmt(nodePg, 3),
          ]);
        }
      }
    }
  }
  console.log(`\nP5, ${started}, ${repeats} repeats, ${variants.map((v) => v.name).join(' / ')}\n`);
  console.log(
    markdownTable(
      [
        'backend',
        'variant',
        'flow',
        'c',
        'executions per cell',
        'exec/s',
        'exec/s ÷ first, paired',
        'node CPU µs/exec',
        'CPU ÷ first, paired',
        'KiB allocated/exec',
        'node + pg CPU ms/exec',
      ],
      rows,
    ),
  );
}

await main();
