import type { ExecutionCellResult } from './execution-cell.js';
import { roundToConcurrency } from './knobs.js';

/** P11 is defined at c = 32; LOOM_BENCH_CONCS does not change it. */
export const crossoverConcurrency = 32;
/** Aim for about this long per cell with slow effects (executions = c × rounds). */
const slowCellMs = 1_500;

/** Executions for one latency: the backend's count, fewer when each takes ≥ 1 ms of effect. */
export function crossoverExecutions(base: number, effectMs: number): number {
  const bySlowness =
    effectMs <= 0
      ? base
      : Math.max(crossoverConcurrency * 8, (crossoverConcurrency * slowCellMs) / effectMs);
  return roundToConcurrency(Math.min(base, bySlowness), crossoverConcurrency);
}

/** The write share of a cell: time inside append ÷ (time inside append + time inside effects). */
export function writeShare(
  result: Pick<ExecutionCellResult, 'appendMsPerExecution' | 'effectMsPerExecution'>,
) {
  const total = result.appendMsPerExecution + result.effectMsPerExecution;
  return total === 0 ? 1 : result.appendMsPerExecution / total;
}

/** Names the crossover: the two latencies between which the write share falls below half. */
export function crossover(points: readonly { effectMs: number; share: number }[]): string {
  const sorted = [...points].sort((a, b) => a.effectMs - b.effectMs);
  const first = sorted.findIndex((point) => point.share < 0.5);
  if (first === -1) return 'writes dominate at every effect latency measured';
  if (first === 0) return `effects dominate already at ${sorted[0]?.effectMs} ms`;
  return `between ${sorted[first - 1]?.effectMs} ms and ${sorted[first]?.effectMs} ms of effect latency`;
}
