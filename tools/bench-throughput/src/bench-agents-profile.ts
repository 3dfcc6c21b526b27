/**
 * `bench:agents:profile`: what one agent run costs this process (PERFORMANCE.md P18). The P6
 * cell without model latency (stub model, 2 model calls and 1 read-only tool call per run,
 * `LOOM_BENCH_IN_FLIGHT` runs in flight, default 256): CPU µs per run and per turn
 * (`process.cpuUsage`), heap bytes allocated per run and per turn (V8's GC profiler), events per
 * run. Each measured cell first runs `LOOM_BENCH_WARMUP_RUNS` uncounted runs on its own runtime
 * (default: as many as it measures; 0 for none), after the forced GC of its heap baseline. With `LOOM_BENCH_BASELINE` (the root of an older checkout, built, or several as
 * `name=path,name=path`) the same cells run on its packages too, interleaved in a rotating order
 * within every repeat, with the ratios paired per repeat. `LOOM_BENCH_AGENT_PROFILE=cpu` (or
 * `alloc`) then runs one more memory cell per variant (`LOOM_BENCH_AGENT_PROFILE_BACKEND=sqlite`:
 * a SQLite FULL cell of `LOOM_BENCH_DURABLE_EXECS` runs) under the inspector's CPU profiler (or
 * the sampling heap profiler, collected objects included), prints the top functions by self time
 * (or bytes allocated) and the same grouped by package, and writes the raw profile to `results/`.
 * `LOOM_BENCH_AGENT_PROMISES=1` runs one more memory cell per variant under an `async_hooks`
 * promise hook and prints the promises made per run: an exact count, where this shared box's CPU
 * figures move by more than a cut that saves a few awaits (the hook slows the cell; only the count
 * is read, and it includes the cell's own few promises per run, the same for every variant).
 */
import { createHook } from 'node:async_hooks';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AgentLoom, type AgentStore, currentLoom, runFanoutCell } from './agent-cell.js';
import { dropPostgres, type PgTarget, reachPostgres } from './bench-backend.js';
import { collectGarbage } from './closed-loop.js';
import { rotatingOrder } from './interleave.js';
import type { Backend } from './knobs.js';
import { markdownTable } from './markdown-table.js';
import { backendsKnob, countKnob, formatNumber, intKnob, profileKnob } from './script-knobs.js';
import { median, summarize } from './stats.js';

interface Variant {
  name: string;
  loom: AgentLoom;
}

interface Cell {
  backend: Backend;
  variant: string;
  repeat: number;
  runs: number;
  runsPerSec: number;
  cpuUsPerRun: number;
  bytesPerRun: number;
  eventsPerRun: number;
  turnsPerRun: number;
}

/** An older checkout's built packages, loaded from its own tree (its own dependencies too). */
async function loadLoom(root: string): Promise<AgentLoom> {
  const load = async (file: string) =>
    (await import(pathToFileURL(join(root, 'packages', file)).href)) as Record<string, unknown>;
  const agentLoop = await load('agent-loop/dist/index.js');
  const reasoning = await load('reasoning/dist/index.js');
  const flows = await load('workflow-runtime/dist/index.js');
  const sqlite = await load('workflow-runtime/dist/sqlite.js');
  const postgres = await load('workflow-runtime/dist/postgres.js');
  const kernel = await load('event-runtime/dist/index.js');
  return {
    createAgentRuntime: agentLoop.createAgentRuntime,
    defineAgent: agentLoop.defineAgent,
    defineTool: agentLoop.defineTool,
    StubModel: reasoning.StubModel,
    createRuntime: flows.createRuntime,
    InMemoryEventStore: kernel.InMemoryEventStore,
    openSqlite: sqlite.openSqlite,
    openPostgres: postgres.openPostgres,
  } as AgentLoom;
}

async function loadVariants(): Promise<Variant[]> {
  const variants: Variant[] = [{ name: 'after', loom: currentLoom }];
  const baseline = process.env.LOOM_BENCH_BASELINE;
  if (baseline === undefined || baseline === '') return variants;
  const older: Variant[] = [];
  for (const entry of baseline.split(',')) {
    const [name, path] = entry.includes('=') ? entry.split('=', 2) : ['before', entry];
    older.push({ name: name as string, loom: await loadLoom(path as string) });
  }
  return [...older, ...variants];
}

/** Where the durable cells write: a temporary directory, and Postgres when asked for. */
interface Places {
  directory: string;
  pg: PgTarget | undefined;
  cells: number;
}

async function storeFor(places: Places, backend: Backend): Promise<AgentStore> {
  const name = `cell${places.cells++}`;
  if (backend === 'memory') return { kind: 'memory' };
  if (backend === 'sqlite') return { kind: 'sqlite', directory: places.directory, name };
  const pg = places.pg as PgTarget;
  // A schema per cell: every variant writes into an empty log.
  const schema = `${pg.schema}_${name}`;
  await pg.admin.query(`CREATE SCHEMA ${schema}`);
  return { kind: 'postgres', url: pg.url, schema };
}

async function dropStore(places: Places, store: AgentStore): Promise<void> {
  if (store.kind === 'postgres') {
    await places.pg?.admin.query(`DROP SCHEMA IF EXISTS ${store.schema} CASCADE`);
  }
}

async function runCell(
  variant: Variant,
  places: Places,
  backend: Backend,
  runs: number,
  inFlight: number,
  warmupRuns: number,
  onMeasure?: () => Promise<void>,
): Promise<Omit<Cell, 'backend' | 'variant' | 'repeat'>> {
  const store = await storeFor(places, backend);
  try {
    collectGarbage();
    const result = await runFanoutCell(
      store,
      {
        runs,
        inFlight,
        latencyMs: 0,
        countAllocation: true,
        warmupRuns,
        ...(onMeasure === undefined ? {} : { onMeasure }),
      },
      variant.loom,
    );
    return {
      runs,
      runsPerSec: (runs * 1000) / result.wallMs,
      cpuUsPerRun: result.cpuMsPerRun * 1000,
      bytesPerRun: result.allocatedBytesPerRun ?? 0,
      eventsPerRun: result.eventsPerRun,
      turnsPerRun: result.turnsPerRun,
    };
  } finally {
    await dropStore(places, store);
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  selfSize?: number;
  children?: Array<ProfileNode | number>;
}

/** The cell's own bookkeeping (it counts the log's events before and after the runs). */
const bookkeepingFrame = 'countEvents';

/** The ids of a CPU profile's nodes at or under a bookkeeping frame: left out of the summary. */
function bookkeeping(nodes: readonly ProfileNode[]): Set<number> {
  const parentOf = new Map<number, ProfileNode>();
  for (const node of nodes) {
    for (const child of node.children ?? []) parentOf.set(child as number, node);
  }
  const left = new Set<number>();
  for (const node of nodes) {
    for (let at: ProfileNode | undefined = node; at !== undefined; at = parentOf.get(at.id)) {
      if (at.callFrame.functionName === bookkeepingFrame) {
        left.add(node.id);
        break;
      }
    }
  }
  return left;
}

/** `function file:line`, the file relative to its package. */
function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/(packages|node_modules|tools)\//, '$1/')
    .replace(/^\/tmp\/[^/]+\//, '');
  return `${functionName || '(anonymous)'} ${file === '' ? '' : `${file}:${lineNumber + 1}`}`.trim();
}

/** The package a frame belongs to: a Loom package, the bench tool, a dependency, Node, V8 or GC. */
export function packageOf(functionName: string, url: string): string {
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)' || functionName === '(idle)' || functionName === '(root)') {
    return functionName;
  }
  const loom = /\/packages\/([^/]+)\//.exec(url);
  if (loom !== null) return loom[1] as string;
  if (url.includes('/tools/bench-throughput/')) return 'bench tool';
  const dependency =
    /\/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (dependency !== null) return `dependency ${dependency[1]}`;
  if (url.startsWith('node:')) return 'node internals';
  if (url === '') return 'V8 builtins (JSON, Promise, Map, …)';
  return 'other';
}

async function profiled(
  variant: Variant,
  places: Places,
  kind: 'cpu' | 'alloc',
  backend: Backend,
  runs: number,
  inFlight: number,
): Promise<void> {
  const warmupRuns = warmupRunsOf(runs);
  const session = new Session();
  session.connect();
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  const add = (node: ProfileNode, value: number) => {
    const name = frameName(node);
    byFunction.set(name, (byFunction.get(name) ?? 0) + value);
    const pkg = packageOf(node.callFrame.functionName, node.callFrame.url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + value);
  };
  let total = 0;
  let raw: unknown;
  // The profiler starts after the cell's warm-up, right before its measured runs.
  if (kind === 'cpu') {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
  } else {
    await session.post('HeapProfiler.enable');
  }
  const measured = await runCell(variant, places, backend, runs, inFlight, warmupRuns, async () => {
    if (kind === 'cpu') {
      await session.post('Profiler.start');
    } else {
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 256,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      } as never);
    }
  });
  const perRun = kind === 'cpu' ? measured.cpuUsPerRun : measured.bytesPerRun;
  if (kind === 'cpu') {
    const { profile } = (await session.post('Profiler.stop')) as unknown as {
      profile: { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
    };
    raw = profile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const left = bookkeeping(profile.nodes);
    for (let index = 0; index < profile.samples.length; index++) {
      if (left.has(profile.samples[index] as number)) continue;
      const node = byId.get(profile.samples[index] as number) as ProfileNode;
      const delta = profile.timeDeltas[index] ?? 0;
      total += delta;
      add(node, delta);
    }
  } else {
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
      profile: { head: ProfileNode };
    };
    raw = profile;
    const visit = (node: ProfileNode) => {
      if (node.callFrame.functionName === bookkeepingFrame) return;
      const size = node.selfSize ?? 0;
      total += size;
      add(node, size);
      for (const child of node.children ?? []) visit(child as ProfileNode);
    };
    visit(profile.head);
  }
  session.disconnect();
  const resultsDir = join(import.meta.dirname, '..', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(
    resultsDir,
    `${new Date().toISOString().replace(/[:.]/g, '-')}-agents-${variant.name}-${backend}.${kind === 'cpu' ? 'cpuprofile' : 'heapprofile'}`,
  );
  writeFileSync(file, JSON.stringify(raw));
  const unit = kind === 'cpu' ? 'self time' : 'bytes allocated';
  const perRunHeader = kind === 'cpu' ? 'µs per run (share × CPU)' : 'bytes per run';
  const perRunOf = (value: number) =>
    kind === 'cpu' ? ((value / total) * perRun).toFixed(1) : ((value / total) * perRun).toFixed(0);
  const rows = (map: Map<string, number>, top: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, value]) => [
        `\`${name}\``,
        `${((100 * value) / total).toFixed(1)} %`,
        perRunOf(value),
      ]);
  const head = kind === 'cpu' ? `${perRun.toFixed(0)} µs of CPU` : `${perRun.toFixed(0)} bytes`;
  console.log(
    `\n${variant.name}: ${unit} by package, ${backend === 'sqlite' ? 'sqlite FULL' : backend}, ${runs} runs, ${inFlight} in flight, ${head} per run under the profiler (${file})\n`,
  );
  console.log(markdownTable(['package', 'share', perRunHeader], rows(byPackage, 20)));
  console.log(`\n${variant.name}: top functions by ${unit}\n`);
  console.log(
    markdownTable(
      ['function', 'share', perRunHeader],
      rows(byFunction, intKnob('LOOM_BENCH_AGENT_PROFILE_TOP', 30)),
    ),
  );
}

/** Promises made per run in one memory cell of `variant` (an `async_hooks` promise hook). */
async function promisesPerRun(
  variant: Variant,
  places: Places,
  runs: number,
  inFlight: number,
): Promise<number> {
  let made = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') made++;
    },
  });
  collectGarbage();
  hook.enable();
  try {
    // No warm-up: the hook would count its promises too, and the count does not depend on it.
    await runCell(variant, places, 'memory', runs, inFlight, 0);
  } finally {
    hook.disable();
  }
  return made / runs;
}

/**
 * The runs of warm-up before each measured cell (and the profiled one), on its own runtime after
 * the heap's baseline GC: `LOOM_BENCH_WARMUP_RUNS`, default as many as the cell measures; 0
 * measures right after the forced GC, as this bench did before 2026-12-07 (see
 * `FanoutOptions.warmupRuns` for why that costs the first runs more).
 */
function warmupRunsOf(cellRuns: number): number {
  return countKnob('LOOM_BENCH_WARMUP_RUNS', cellRuns);
}

/** The backend the profiled cell runs on: `LOOM_BENCH_AGENT_PROFILE_BACKEND`, default memory. */
function profileBackendKnob(): 'memory' | 'sqlite' {
  const raw = process.env.LOOM_BENCH_AGENT_PROFILE_BACKEND || 'memory';
  if (raw !== 'memory' && raw !== 'sqlite') {
    throw new Error(`LOOM_BENCH_AGENT_PROFILE_BACKEND must be memory or sqlite, got ${raw}`);
  }
  return raw;
}

async function main(): Promise<void> {
  const runs = intKnob('LOOM_BENCH_EXECS', 5_000);
  const durableRuns = intKnob('LOOM_BENCH_DURABLE_EXECS', 1_000);
  const repeats = intKnob('LOOM_BENCH_REPEATS', 5);
  const inFlight = intKnob('LOOM_BENCH_IN_FLIGHT', 256);
  const backends = backendsKnob();
  const profile = profileKnob('LOOM_BENCH_AGENT_PROFILE');
  const profileBackend = profileBackendKnob();
  if (repeats < 5) {
    process.stderr.write(
      `note: LOOM_BENCH_REPEATS=${repeats}: PERFORMANCE.md asks for at least 5; a smoke run\n`,
    );
  }
  const variants = await loadVariants();
  const places: Places = {
    directory: mkdtempSync(join(tmpdir(), 'loom-agents-profile-')),
    pg: undefined,
    cells: 0,
  };
  try {
    if (backends.includes('postgres')) {
      const url = process.env.LOOM_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/test';
      const reached = await reachPostgres(url);
      if (typeof reached === 'string') {
        process.stderr.write(`postgres: cannot reach it (${reached}): skipping its cells\n`);
        backends.splice(backends.indexOf('postgres'), 1);
      } else {
        places.pg = reached;
      }
    }
    await sweep(variants, backends, places, { runs, durableRuns, repeats, inFlight });
    if (profile === 'cpu' || profile === 'alloc') {
      for (const variant of variants) {
        collectGarbage();
        await profiled(
          variant,
          places,
          profile,
          profileBackend,
          profileBackend === 'memory' ? runs : durableRuns,
          inFlight,
        );
      }
    }
    if (process.env.LOOM_BENCH_AGENT_PROMISES === '1') {
      const rows: string[][] = [];
      for (const variant of variants) {
        const perRun = await promisesPerRun(variant, places, runs, inFlight);
        rows.push([variant.name, formatNumber(perRun, 1)]);
      }
      console.log(`\nPromises made per run (memory, ${runs} runs, ${inFlight} in flight)\n`);
      console.log(markdownTable(['variant', 'promises per run'], rows));
    }
  } finally {
    rmSync(places.directory, { recursive: true, force: true });
    if (places.pg !== undefined) await dropPostgres(places.pg);
  }
}

async function sweep(
  variants: Variant[],
  backends: Backend[],
  places: Places,
  knobs: { runs: number; durableRuns: number; repeats: number; inFlight: number },
): Promise<void> {
  const { repeats, inFlight } = knobs;
  const countFor = (backend: Backend) => (backend === 'memory' ? knobs.runs : knobs.durableRuns);
  const warmupFor = (backend: Backend) => warmupRunsOf(countFor(backend));
  const started = new Date().toISOString();
  // One warm-up cell per variant and backend (the JIT, the store's first writes), not counted.
  for (const backend of backends) {
    for (const variant of variants) {
      await runCell(variant, places, backend, Math.min(countFor(backend), 1_000), inFlight, 0);
    }
  }
  const cells: Cell[] = [];
  for (const backend of backends) {
    for (let repeat = 0; repeat < repeats; repeat++) {
      for (const variant of rotatingOrder(variants, repeat)) {
        const measured = await runCell(
          variant,
          places,
          backend,
          countFor(backend),
          inFlight,
          warmupFor(backend),
        );
        cells.push({ backend, variant: variant.name, repeat, ...measured });
        process.stderr.write(
          `${backend} ${variant.name} repeat ${repeat + 1}/${repeats}: ${measured.runsPerSec.toFixed(0)} runs/s, ${measured.cpuUsPerRun.toFixed(0)} µs, ${measured.bytesPerRun.toFixed(0)} B, ${measured.eventsPerRun} events per run\n`,
        );
      }
    }
  }
  const fmt = (values: number[], digits = 0) => {
    const { median: mid, min, max } = summarize(values);
    return `${formatNumber(mid, digits)} (${formatNumber(min, digits)}..${formatNumber(max, digits)})`;
  };
  const rows: string[][] = [];
  for (const backend of backends) {
    const of = (name: string) =>
      cells.filter((cell) => cell.backend === backend && cell.variant === name);
    const base = of(variants[0]?.name ?? 'after');
    for (const variant of variants) {
      const mine = of(variant.name);
      const first = variant.name === base[0]?.variant;
      const paired = (pick: (cell: Cell) => number) =>
        first
          ? '–'
          : `${median(mine.map((cell, i) => pick(cell) / pick(base[i] as Cell))).toFixed(2)}×`;
      const turns = median(mine.map((cell) => cell.turnsPerRun));
      rows.push([
        backend === 'sqlite' ? 'sqlite FULL' : backend,
        variant.name,
        formatNumber(countFor(backend), 0),
        fmt(mine.map((cell) => cell.runsPerSec)),
        fmt(mine.map((cell) => cell.cpuUsPerRun)),
        paired((cell) => cell.cpuUsPerRun),
        fmt(mine.map((cell) => cell.cpuUsPerRun / cell.turnsPerRun)),
        fmt(
          mine.map((cell) => cell.bytesPerRun / 1024),
          1,
        ),
        paired((cell) => cell.bytesPerRun),
        fmt(
          mine.map((cell) => cell.bytesPerRun / 1024 / cell.turnsPerRun),
          1,
        ),
        `${median(mine.map((cell) => cell.eventsPerRun))} / ${turns}`,
      ]);
    }
  }
  console.log(
    `\nP18 agent runs, ${started}, ${repeats} repeats, ${inFlight} in flight, no model latency, ${backends.map((backend) => `${backend} ${formatNumber(warmupFor(backend), 0)} warm-up runs per cell`).join(', ')}, ${variants.map((v) => v.name).join(' / ')}\n`,
  );
  console.log(
    markdownTable(
      [
        'backend',
        'variant',
        'runs per cell',
        'runs/s',
        'CPU µs/run',
        'CPU ÷ first, paired',
        'CPU µs/turn',
        'KiB allocated/run',
        'bytes ÷ first, paired',
        'KiB/turn',
        'events / turns per run',
      ],
      rows,
    ),
  );
}

await main();
