import type { JsonValue, LeaseMode } from '@loom/event-runtime';
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import { CountingEventStore, leaseCalls as leaseCallsOf } from '@loom/event-runtime/testing';
import { AppendTiming } from './append-timing.js';
import type { BenchBackend } from './bench-backend.js';
import { benchFlow, type EffectClock, eventsPerExecution, payload256 } from './bench-flows.js';
import { closedLoop } from './closed-loop.js';
import type { IdStyle } from './knobs.js';
import type { LatencyMs } from './stats.js';

export { collectGarbage } from './closed-loop.js';

/** One cell: n-step flows, `executions` of them, `concurrency` in flight at any time. */
export interface ExecutionCellSpec {
  /** Unique within the run: caller ids and log lines carry it. */
  cellId: string;
  steps: number;
  effectMs: number;
  concurrency: number;
  executions: number;
  ids: IdStyle;
  leaseMode: LeaseMode;
  /** The runtime's group commit (ADR 0040); default: the runtime's default (on, maxBatch 64). */
  groupCommit?: boolean | { maxBatch: number };
}

/** What one cell measured. Counts are per execution, averaged over the cell. */
export interface ExecutionCellResult {
  executions: number;
  wallMs: number;
  execPerSec: number;
  latencyMs: LatencyMs;
  /** Rows the cell added to the log, per execution (asserted equal to 2n + 2). */
  eventsPerExecution: number;
  /** Store calls (append, transact, read, readAll, findExecutions) per execution. */
  storeCallsPerExecution: number;
  /** Appends (durability barriers) per execution: n + 1 for an n-step flow. */
  appendsPerExecution: number;
  /**
   * Store writes per execution: plain appends, `appendBatch` calls and transactions (round trips
   * that write). n + 1 without group commit; less when executions share writes.
   */
  writesPerExecution: number;
  /**
   * Appends (durability barriers, n + 1 per execution) per store write: 1 without group commit,
   * the mean batch size with it.
   */
  appendsPerWrite: number;
  /** Statements sent to Postgres per execution (Postgres only). */
  roundTripsPerExecution: number | null;
  /** Whole-machine busy CPU (every process, the database included) per execution. */
  machineCpuMsPerExecution: number | null;
  /**
   * This process's CPU plus the Postgres server processes' CPU per execution (Postgres only):
   * the client + database cost without the rest of a shared machine's load.
   */
  clientAndDbCpuMsPerExecution: number | null;
  /** This process's CPU (user + system) per execution, in microseconds. */
  processCpuUsPerExecution: number;
  /** Time inside the store's append, summed over executions, per execution. */
  appendMsPerExecution: number;
  /** Time inside effects, summed over executions, per execution. */
  effectMsPerExecution: number;
  leaseCalls: { acquireMany: number; renewMany: number; releaseMany: number };
}

/**
 * Runs one cell on a fresh runtime over `backend` and checks what it wrote: the rows added to
 * the log must be exactly executions × (2n + 2), or it throws (a benchmark that silently wrote
 * less would report a rate it never achieved).
 */
export async function runExecutionCell(
  backend: BenchBackend,
  spec: ExecutionCellSpec,
  onProgress: (done: number) => void,
): Promise<ExecutionCellResult> {
  if (spec.leaseMode !== 'off' && typeof backend.leases === 'string') {
    throw new Error(`cell ${spec.cellId} needs a lease store: ${backend.leases}`);
  }
  const clock: EffectClock = { effectMs: 0 };
  const flow = benchFlow(spec.steps, spec.effectMs, clock);
  const input: JsonValue = payload256();
  const timing = new AppendTiming();
  const counting = new CountingEventStore(timing.wrap(backend.events));
  const backgroundErrors: unknown[] = [];
  const runtime = createKernelRuntime({
    store: counting,
    ...(spec.leaseMode === 'off' ? {} : { leases: backend.leases as never }),
    leaseMode: spec.leaseMode,
    ...(spec.groupCommit === undefined ? {} : { groupCommit: spec.groupCommit }),
    onError: (error) => backgroundErrors.push(error),
  });
  const rowsBefore = await backend.countEvents();
  const roundTripsBefore = backend.roundTrips();
  const loop = await closedLoop(
    {
      concurrency: spec.concurrency,
      operations: spec.executions,
      postgres: backend.kind === 'postgres',
    },
    async (index) => {
      const handle = await runtime.start(
        flow,
        input,
        spec.ids === 'caller' ? { executionId: `${spec.cellId}-${index}` } : {},
      );
      if (handle.existing) throw new Error(`execution ${handle.executionId} already existed`);
      await handle.result();
    },
    onProgress,
  );
  const roundTripsAfter = backend.roundTrips();
  const leaseCalls = leaseCallsOf(runtime);
  await runtime.shutdown();
  if (backgroundErrors.length > 0) {
    throw new Error(
      `cell ${spec.cellId}: ${backgroundErrors.length} background errors, first: ${String(backgroundErrors[0])}`,
    );
  }
  const rowsWritten = (await backend.countEvents()) - rowsBefore;
  const expected = spec.executions * eventsPerExecution(spec.steps);
  if (rowsWritten !== expected || counting.counts.eventsAppended !== expected) {
    throw new Error(
      `cell ${spec.cellId} on ${backend.kind}: ${spec.executions} executions of a ${spec.steps}-step ` +
        `flow must write ${expected} events (2n + 2 each), but the log gained ${rowsWritten} rows ` +
        `and append was handed ${counting.counts.eventsAppended} envelopes`,
    );
  }
  const { appends, batches, batchedAppends, transactions, reads, readAlls, findExecutions } =
    counting.counts;
  const per = (value: number) => value / spec.executions;
  return {
    executions: spec.executions,
    wallMs: loop.wallMs,
    execPerSec: (spec.executions * 1000) / loop.wallMs,
    latencyMs: loop.latencyMs,
    eventsPerExecution: per(rowsWritten),
    storeCallsPerExecution: per(appends + transactions + reads + readAlls + findExecutions),
    appendsPerExecution: per(appends),
    writesPerExecution: per(appends - batchedAppends + batches + transactions),
    appendsPerWrite: appends / (appends - batchedAppends + batches),
    roundTripsPerExecution:
      roundTripsBefore === null || roundTripsAfter === null
        ? null
        : per(roundTripsAfter - roundTripsBefore),
    machineCpuMsPerExecution: loop.machineCpuMs === null ? null : per(loop.machineCpuMs),
    clientAndDbCpuMsPerExecution:
      loop.clientAndDbCpuMs === null ? null : per(loop.clientAndDbCpuMs),
    processCpuUsPerExecution: per(loop.processCpuUs),
    appendMsPerExecution: per(timing.appendMs),
    effectMsPerExecution: per(clock.effectMs),
    leaseCalls,
  };
}
