import type { Clock } from '../clock.js';
import type { EventStore } from '../event-store.js';
import type { Lease } from '../lease-store.js';

/** What recovery needs of the runtime. */
export interface RecoveryConfig {
  readonly store: EventStore;
  readonly clock: Clock;
  /** An unleased running execution is resumed only after its log has been quiet this long. */
  readonly recoverQuietMs: number;
  /** The execution's lease, when the runtime has a lease store. */
  leaseOf(executionId: string): Promise<Lease | undefined> | undefined;
  /** True when this node drives the execution already. */
  isDriving(executionId: string): boolean;
  /**
   * Leases the executions about to be resumed, in one group commit (all of them when the runtime
   * has no lease store). A resume of an execution leased here takes no further lease call.
   */
  acquireLeases(executionIds: readonly string[]): Promise<Set<string>>;
  /** Gives up a lease taken by `acquireLeases` for an execution that is not driven here after all. */
  releaseLease(executionId: string): void;
  resume(executionId: string): Promise<unknown>;
  onError(error: unknown): void;
}

/**
 * Finds executions in the log that no node is driving — suspended ones that came due, running
 * ones whose owner went away — and resumes them on this node. Their leases are taken in one
 * batch per round (one `acquireMany` per `leaseBatchMax`), not one call per execution.
 */
export class ExecutionRecovery {
  constructor(private readonly config: RecoveryConfig) {}

  /** Claims up to `limit` due suspended executions and resumes them; returns the ids resumed. */
  async wakeDue(limit: number): Promise<string[]> {
    const { store, clock } = this.config;
    const claimed = await store.claimDue(clock.now(), limit);
    if (claimed.length === 0) return [];
    const resumed: string[] = [];
    for (const executionId of await this.resumeLeased(claimed)) resumed.push(executionId);
    return resumed;
  }

  /** Resumes running executions nobody drives; returns the ids this node now drives. */
  async recover(): Promise<string[]> {
    const { store, clock, recoverQuietMs } = this.config;
    const resumed: string[] = [];
    const nowMs = clock.now();
    let after = '';
    for (;;) {
      const page = await store.findExecutions({
        status: 'running',
        afterExecutionId: after,
        limit: 500,
      });
      if (page.length === 0) break;
      after = page[page.length - 1]?.executionId as string;
      const orphans: string[] = [];
      for (const summary of page) {
        if (this.config.isDriving(summary.executionId)) continue;
        const lease = await this.config.leaseOf(summary.executionId);
        if (lease !== undefined && lease.expiresAtMs > nowMs) continue;
        if (lease === undefined && summary.lastEventAt > nowMs - recoverQuietMs) continue;
        orphans.push(summary.executionId);
      }
      for (const executionId of await this.resumeLeased(orphans)) {
        if (this.config.isDriving(executionId)) resumed.push(executionId);
      }
    }
    return resumed;
  }

  /**
   * Leases `executionIds` in one batch, then resumes the ones granted, one at a time; returns
   * those whose resume succeeded. A lease for an execution that is not driven here afterwards
   * (it had settled, another driver started) is released.
   */
  private async resumeLeased(executionIds: readonly string[]): Promise<string[]> {
    if (executionIds.length === 0) return [];
    let leased: Set<string>;
    try {
      leased = await this.config.acquireLeases(executionIds);
    } catch (error) {
      this.config.onError(error);
      return [];
    }
    const resumed: string[] = [];
    for (const executionId of executionIds) {
      if (!leased.has(executionId)) continue;
      try {
        await this.config.resume(executionId);
        resumed.push(executionId);
      } catch (error) {
        this.config.onError(error);
      }
      if (!this.config.isDriving(executionId)) this.config.releaseLease(executionId);
    }
    return resumed;
  }
}
