// One cell of `bench:agents`: a fan-out of agent runs (P6) or one agent run of n turns (P7), on
// a runtime of `@loom/workflow-runtime` over memory, a SQLite file or a Postgres schema.
import { join } from 'node:path';
import { GCProfiler, type GCProfilerResult, getHeapStatistics } from 'node:v8';
import { createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import { type EventStore, InMemoryEventStore } from '@loom/event-runtime';
import { StubModel } from '@loom/reasoning';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import type { Backend } from './knobs.js';

/**
 * The Loom entry points a cell uses. The packages of this checkout by default; `bench:agents:profile`
 * passes an older build's (`LOOM_BENCH_BASELINE`) to run the same cell on it side by side.
 */
export interface AgentLoom {
  createAgentRuntime: typeof createAgentRuntime;
  defineAgent: typeof defineAgent;
  defineTool: typeof defineTool;
  StubModel: typeof StubModel;
  createRuntime: typeof createRuntime;
  InMemoryEventStore: typeof InMemoryEventStore;
  openSqlite: typeof openSqlite;
  openPostgres: typeof openPostgres;
}

/** This checkout's packages. */
export const currentLoom: AgentLoom = {
  createAgentRuntime,
  defineAgent,
  defineTool,
  StubModel,
  createRuntime,
  InMemoryEventStore,
  openSqlite,
  openPostgres,
};

/** Where a cell's runtime keeps its log. */
export type AgentStore =
  | { kind: 'memory' }
  | { kind: 'sqlite'; directory: string; name: string }
  | { kind: 'postgres'; url: string; schema: string };

/** A fresh runtime on `store` (a new SQLite file per name; a shared Postgres schema). */
export async function openAgentFlows(
  store: AgentStore,
  loom: AgentLoom = currentLoom,
): Promise<Runtime> {
  if (store.kind === 'memory') return loom.createRuntime({ store: new loom.InMemoryEventStore() });
  if (store.kind === 'sqlite') {
    const path = join(store.directory, `${store.name}.db`);
    return loom.createRuntime({
      backend: loom.openSqlite({ path, migrate: true, synchronous: 'FULL' }),
    });
  }
  return loom.createRuntime({
    backend: await loom.openPostgres({
      connectionString: store.url,
      schema: store.schema,
      migrate: true,
    }),
  });
}

export function backendOf(store: AgentStore): Backend {
  return store.kind;
}

/** What P6 asks: `runs` runs, `inFlight` at a time, each two model calls of `latencyMs` and one tool call. */
export interface FanoutOptions {
  runs: number;
  inFlight: number;
  latencyMs: number;
  /** Called now and then with the runs finished so far. */
  onProgress?: (done: number) => void;
  /** Also count the heap bytes the runs allocated (V8's GC profiler around the runs). */
  countAllocation?: boolean;
  /**
   * Runs of the same agent on the same runtime, `inFlight` at a time, after the heap's baseline
   * and before the measured runs: not counted in the wall time, CPU, allocations or events
   * (default 0). The baseline's forced GC, with no run in flight, lets V8 collect the maps of a
   * run's objects and throw away the optimized code that depends on them (`--trace-deopt`:
   * "weak objects"), and leaves the heap's limits small: the runs right after it pay for
   * re-optimizing and for frequent major GCs, which a process under steady load does not. The
   * peak and retained heap deltas still count from the baseline, so they include what the
   * warm-up runs keep (their logs, in memory).
   */
  warmupRuns?: number;
  /** Awaited after the warm-up, right before the measured runs start (a profiler's start). */
  onMeasure?: () => Promise<void>;
}

export interface FanoutResult {
  runs: number;
  inFlight: number;
  /** Runs that ended `goal_completed` (all of them, or the cell failed its check). */
  completed: number;
  modelCalls: number;
  toolCalls: number;
  /** The most runs that were started and not finished at one time. */
  maxInFlight: number;
  /** Start of the first run to the result of the last. */
  wallMs: number;
  /** runs ÷ inFlight waves × 2 calls × latencyMs: what no overhead at all would take. */
  idealMs: number;
  /** The highest heap in use (sampled every 10 ms and at the end) minus the heap before, after a GC. */
  peakHeapDeltaBytes: number;
  /** Heap in use after the cell and a GC (the runtime and its store still open) minus before. */
  retainedHeapDeltaBytes: number;
  /** Log events the cell's measured runs wrote, counted in the store, and per run. */
  events: number;
  eventsPerRun: number;
  /** CPU time of this process (user + system, `process.cpuUsage`) per run, in ms. */
  cpuMsPerRun: number;
  /** Turns the runs took, per run (`RunResult.turns`). */
  turnsPerRun: number;
  /** Heap bytes allocated per run (growth between collections, summed), when `countAllocation`. */
  allocatedBytesPerRun?: number;
}

/**
 * Heap bytes allocated between two readings of `heapUsed`, given the GC profiler's collections
 * in between: what the heap grew by before each collection, summed, plus the growth after the last.
 */
export function allocatedBetween(
  usedBefore: number,
  collections: GCProfilerResult,
  usedAfter: number,
): number {
  let bytes = 0;
  let previous = usedBefore;
  for (const gc of collections.statistics) {
    bytes += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previous);
    previous = gc.afterGC.heapStatistics.usedHeapSize;
  }
  return bytes + Math.max(0, usedAfter - previous);
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** The ideal wall time of a fan-out: waves of `inFlight` runs, each two model calls long. */
export function fanoutIdealMs(runs: number, inFlight: number, latencyMs: number): number {
  return Math.ceil(runs / inFlight) * 2 * latencyMs;
}

/**
 * P6: `runs` agent runs, `inFlight` at a time (a new one starts as one finishes), each deciding a
 * tool call (stub model, `latencyMs`), running a read-only no-op tool, then answering (another
 * `latencyMs`). Throws unless every run completed with two model calls and one tool call, and the
 * log holds the same number of events for every run.
 */
export async function runFanoutCell(
  store: AgentStore,
  options: FanoutOptions,
  loom: AgentLoom = currentLoom,
): Promise<FanoutResult> {
  const { runs, inFlight, latencyMs } = options;
  let toolCalls = 0;
  const noop = loom.defineTool({
    name: 'noop',
    description: 'Does nothing',
    input: { type: 'object' },
    sideEffect: 'read_only',
    run: async () => {
      toolCalls++;
      return 'ok';
    },
  });
  const model = new loom.StubModel({
    latencyMs,
    script: (request) =>
      request.messages.some((message) => message.role === 'tool')
        ? { text: 'done' }
        : { toolCalls: [{ tool: 'noop', input: {} }] },
  });
  const agent = loom.defineAgent({
    name: 'fanout',
    model,
    instructions: 'Call noop, then finish.',
    tools: [noop],
  });
  const flows = await openAgentFlows(store, loom);
  const agents = loom.createAgentRuntime({ flows, agents: [agent] });
  try {
    const before = await countEvents(flows.store);
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    let peakHeap = heapBefore;
    // V8's heap statistics, not process.memoryUsage(): the same heapUsed without reading the
    // process's RSS, which cost a few % of the CPU a run is charged.
    const sampler = setInterval(() => {
      peakHeap = Math.max(peakHeap, getHeapStatistics().used_heap_size);
    }, 10);
    const warmupRuns = options.warmupRuns ?? 0;
    let warmStarted = 0;
    const warm = async () => {
      while (warmStarted < warmupRuns) {
        warmStarted++;
        await agents.run(agent, 'go');
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, warmupRuns) }, warm));
    await options.onMeasure?.();
    let started = 0;
    let finished = 0;
    let completed = 0;
    let maxInFlight = 0;
    let turns = 0;
    const allocation = options.countAllocation === true ? new GCProfiler() : undefined;
    const usedBefore = process.memoryUsage().heapUsed;
    allocation?.start();
    const cpuBefore = process.cpuUsage();
    const startMs = performance.now();
    const worker = async () => {
      while (started < runs) {
        started++;
        maxInFlight = Math.max(maxInFlight, started - finished);
        const result = await agents.run(agent, 'go');
        finished++;
        turns += result.turns;
        if (result.reason === 'goal_completed') completed++;
        if (finished % 500 === 0) options.onProgress?.(finished);
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, runs) }, worker));
    const wallMs = performance.now() - startMs;
    const cpu = process.cpuUsage(cpuBefore);
    const allocatedBytes =
      allocation === undefined
        ? undefined
        : allocatedBetween(usedBefore, allocation.stop(), process.memoryUsage().heapUsed);
    clearInterval(sampler);
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    gc();
    const retained = process.memoryUsage().heapUsed - heapBefore;
    // The warm-up's runs write as many events each as the measured ones (checked below).
    const events = (((await countEvents(flows.store)) - before) * runs) / (runs + warmupRuns);
    const result: FanoutResult = {
      runs,
      inFlight,
      completed,
      modelCalls: model.calls,
      toolCalls,
      maxInFlight,
      wallMs,
      idealMs: fanoutIdealMs(runs, inFlight, latencyMs),
      peakHeapDeltaBytes: peakHeap - heapBefore,
      retainedHeapDeltaBytes: retained,
      events,
      eventsPerRun: events / runs,
      cpuMsPerRun: (cpu.user + cpu.system) / 1000 / runs,
      turnsPerRun: turns / runs,
      ...(allocatedBytes === undefined ? {} : { allocatedBytesPerRun: allocatedBytes / runs }),
    };
    const allRuns = runs + warmupRuns;
    if (completed !== runs || model.calls !== 2 * allRuns || toolCalls !== allRuns) {
      throw new Error(
        `P6 cell on ${store.kind}: ${completed}/${runs} runs completed, ${model.calls} model calls and ${toolCalls} tool calls (expected ${2 * allRuns} and ${allRuns}, ${warmupRuns} of each warm-up)`,
      );
    }
    if (!Number.isInteger(result.eventsPerRun)) {
      throw new Error(
        `P6 cell on ${store.kind}: ${events} events for ${runs} runs, not the same number per run`,
      );
    }
    return result;
  } finally {
    await flows.shutdown();
  }
}

/** What P7 asks: one run of `turns` turns whose tool calls return `observationBytes` each. */
export interface LengthOptions {
  turns: number;
  observationBytes: number;
}

export interface LengthResult {
  turns: number;
  observationBytes: number;
  wallMs: number;
  /** UTF-8 bytes of the run's log event payloads (what the store was given to keep). */
  bytes: number;
  events: number;
  modelCalls: number;
  toolCalls: number;
}

/**
 * P7: one agent run of `turns` turns: `turns − 1` calls of a read-only tool returning a string of
 * `observationBytes`, then the final answer. Throws unless the run completed in exactly `turns`
 * turns with `turns − 1` tool calls.
 */
export async function runLengthCell(
  store: AgentStore,
  options: LengthOptions,
): Promise<LengthResult> {
  const { turns, observationBytes } = options;
  const observation = 'x'.repeat(observationBytes);
  let toolCalls = 0;
  const observe = defineTool({
    name: 'observe',
    description: 'Returns an observation',
    input: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    sideEffect: 'read_only',
    run: async () => {
      toolCalls++;
      return observation;
    },
  });
  const model = new StubModel({
    script: (_request, n) =>
      n < turns - 1 ? { toolCalls: [{ tool: 'observe', input: { n } }] } : { text: 'done' },
  });
  const agent = defineAgent({
    name: 'long',
    model,
    instructions: 'Observe, then finish.',
    tools: [observe],
    limits: { stepsMax: turns },
  });
  const flows = await openAgentFlows(store);
  const agents = createAgentRuntime({ flows, agents: [agent] });
  try {
    const startMs = performance.now();
    const result = await agents.run(agent, 'go', { runId: 'long-run' });
    const wallMs = performance.now() - startMs;
    if (result.reason !== 'goal_completed' || result.turns !== turns || toolCalls !== turns - 1) {
      throw new Error(
        `P7 cell on ${store.kind}: the run ended ${result.reason} after ${result.turns} turns and ${toolCalls} tool calls (expected goal_completed, ${turns}, ${turns - 1})`,
      );
    }
    let bytes = 0;
    const log = await flows.store.read('long-run');
    for (const event of log) bytes += Buffer.byteLength(JSON.stringify(event.payload));
    return {
      turns,
      observationBytes,
      wallMs,
      bytes,
      events: log.length,
      modelCalls: model.calls,
      toolCalls,
    };
  } finally {
    await flows.shutdown();
  }
}

/** Every event in the store, counted by paging through the global order. */
async function countEvents(store: EventStore): Promise<number> {
  let count = 0;
  let after = 0;
  for (;;) {
    const page = await store.readAll({ afterPosition: after, limit: 10_000 });
    if (page.length === 0) return count;
    count += page.length;
    after = page[page.length - 1]?.position ?? after;
  }
}
