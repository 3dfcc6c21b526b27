import {
  busyMsBetween,
  processBusyMsBetween,
  readCpuJiffies,
  readProcessJiffies,
} from './proc-stat.js';
import { type LatencyMs, latencies } from './stats.js';

/** What a closed loop measured: wall time, latencies and CPU over the whole loop. */
export interface ClosedLoopResult {
  operations: number;
  wallMs: number;
  latencyMs: LatencyMs;
  /** Whole-machine busy CPU (every process) during the loop, or null without `/proc/stat`. */
  machineCpuMs: number | null;
  /** This process's CPU plus the Postgres server processes' CPU, or null when not asked for. */
  clientAndDbCpuMs: number | null;
  /** This process's CPU (user + system) in microseconds. */
  processCpuUs: number;
}

/** Runs `fn` after a full GC when the process was started with --expose-gc. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * A closed loop: `concurrency` workers, each runs `operation(index)` for the next index and
 * awaits it before taking another, until `operations` have run. A full GC first (under
 * --expose-gc), then CPU counters sampled around the loop; `postgres` adds the Postgres server
 * processes' CPU from `/proc/<pid>/stat`. The first failing operation rejects the loop.
 */
export async function closedLoop(
  spec: { concurrency: number; operations: number; postgres: boolean },
  operation: (index: number) => Promise<void>,
  onProgress: (done: number) => void = () => {},
): Promise<ClosedLoopResult> {
  const latencyMs = new Float64Array(spec.operations);
  let next = 0;
  let done = 0;
  collectGarbage();
  const cpuBefore = readCpuJiffies();
  const dbBefore = spec.postgres ? readProcessJiffies('postgres') : undefined;
  const processBefore = process.cpuUsage();
  const started = performance.now();
  const worker = async () => {
    for (;;) {
      const index = next++;
      if (index >= spec.operations) return;
      const t0 = performance.now();
      await operation(index);
      latencyMs[index] = performance.now() - t0;
      done++;
      if ((done & 63) === 0) onProgress(done);
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const wallMs = performance.now() - started;
  const processCpu = process.cpuUsage(processBefore);
  const dbAfter = spec.postgres ? readProcessJiffies('postgres') : undefined;
  const cpuAfter = readCpuJiffies();
  const processCpuUs = processCpu.user + processCpu.system;
  return {
    operations: spec.operations,
    wallMs,
    latencyMs: latencies(latencyMs),
    machineCpuMs:
      cpuBefore === undefined || cpuAfter === undefined ? null : busyMsBetween(cpuBefore, cpuAfter),
    clientAndDbCpuMs:
      dbBefore === undefined || dbAfter === undefined
        ? null
        : processCpuUs / 1000 + processBusyMsBetween(dbBefore, dbAfter),
    processCpuUs,
  };
}
