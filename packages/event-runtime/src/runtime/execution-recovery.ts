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
  resume(executionId: string): Promise<unknown>;
  onError(error: unknown): void;
}

/**
 * Finds executions in the log that no node is driving — suspended ones that came due, running
 * ones whose owner went away — and resumes them on this node.
 */
export class ExecutionRecovery {
  constructor(private readonly config: RecoveryConfig) {}

  /** Claims up to `limit` due suspended executions and resumes them; returns the ids resumed. */
  async wakeDue(limit: number): Promise<string[]> {
    const { store, clock } = this.config;
    const claimed = await store.claimDue(clock.now(), limit);
    const resumed: string[] = [];
    for (const executionId of claimed) {
      try {
        await this.config.resume(executionId);
        resumed.push(executionId);
      } catch (error) {
        this.config.onError(error);
      }
    }
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
      for (const summary of page) {
        if (this.config.isDriving(summary.executionId)) continue;
        const lease = await this.config.leaseOf(summary.executionId);
        if (lease !== undefined && lease.expiresAtMs > nowMs) continue;
        if (lease === undefined && summary.lastEventAt > nowMs - recoverQuietMs) continue;
        try {
          await this.config.resume(summary.executionId);
          if (this.config.isDriving(summary.executionId)) resumed.push(summary.executionId);
        } catch (error) {
          this.config.onError(error);
        }
      }
    }
    return resumed;
  }
}
