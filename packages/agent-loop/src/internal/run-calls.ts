import type { ModelCallUsage } from '../run-result.js';
import { type RunOutput, usageOf } from './run-memory.js';

/**
 * Hands a run's per-call usage from its flow to a `result()` waiting in the same process, so the
 * result need not read the run's log again for it (one paged read per run: on Postgres a query).
 * Only runs someone waits for here are kept, and only until that wait ends. The log stays the
 * source: a result whose output does not match what the flow handed over (the run ended on
 * another node, after this one lost it) reads its calls from the log as before.
 */
export class RunCallsHandoff {
  /** Waiters per run id, and what the run's flow handed over once it returned. */
  private readonly runs = new Map<string, { waiters: number; calls?: ModelCallUsage[] }>();

  /** A `result()` starts waiting for `runId` here. Pair with {@link take}. */
  want(runId: string): void {
    const entry = this.runs.get(runId);
    if (entry === undefined) this.runs.set(runId, { waiters: 1 });
    else entry.waiters++;
  }

  /** The run's flow returned in this process with `calls`: kept if someone waits for the run. */
  offer(runId: string, calls: ModelCallUsage[]): void {
    const entry = this.runs.get(runId);
    if (entry !== undefined) entry.calls = calls;
  }

  /**
   * Ends one wait for `runId`: the calls its flow handed over, if they are those of `output` (the
   * same turns and the same usage, latency and cost included), else undefined (read the log).
   */
  take(runId: string, output: RunOutput | undefined): ModelCallUsage[] | undefined {
    const entry = this.runs.get(runId);
    if (entry === undefined) return undefined;
    if (--entry.waiters === 0) this.runs.delete(runId);
    const calls = entry.calls;
    if (calls === undefined || output === undefined || output.turns !== calls.length)
      return undefined;
    const mine = usageOf(calls);
    const theirs = output.usage;
    for (const key of Object.keys(mine) as (keyof typeof mine)[]) {
      if (mine[key] !== theirs[key]) return undefined;
    }
    // The last waiter gets the flow's own array (the flow is done with it); one before it a copy,
    // so a caller that changes its result changes nobody else's.
    return entry.waiters === 0 ? calls : structuredClone(calls);
  }

  /** Runs someone waits for now (for tests: nothing is kept past its wait). */
  get size(): number {
    return this.runs.size;
  }
}
