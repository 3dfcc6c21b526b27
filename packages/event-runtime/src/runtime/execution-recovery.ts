import type { KernelContext } from './kernel-context.js';

/** Due executions claimed per `wakeDue` round unless the caller says otherwise. */
export const wakeDueLimitDefault = 100;

/**
 * Finds executions in the log that no node is driving — suspended ones that came due, running
 * ones whose owner went away — and resumes them on this node. Their leases are taken in one
 * batch per round (one `acquireMany` per `leaseBatchMax`), not one call per execution.
 */
export class ExecutionRecovery {
  constructor(private readonly kernel: KernelContext) {}

  /** Claims up to `limit` due suspended executions and resumes them; returns the ids resumed. */
  async wakeDue(limit: number = wakeDueLimitDefault): Promise<string[]> {
    const { store, clock } = this.kernel;
    const claimed = await store.claimDue(clock.now(), limit);
    if (claimed.length === 0) return [];
    const { events, nodeId } = this.kernel;
    for (const executionId of claimed) events.emit('timer:fired', { nodeId, executionId });
    const resumed: string[] = [];
    for (const executionId of await this.resumeLeased(claimed, 'timer')) resumed.push(executionId);
    return resumed;
  }

  /** Resumes running executions nobody drives; returns the ids this node now drives. */
  async recover(): Promise<string[]> {
    const { store, clock } = this.kernel;
    const { recoverQuietMs } = this.kernel.settings;
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
        if (this.kernel.executions.has(summary.executionId)) continue;
        const lease = await this.kernel.leaseStore?.get(summary.executionId);
        if (lease !== undefined && lease.expiresAtMs > nowMs) continue;
        if (lease === undefined && summary.lastEventAt > nowMs - recoverQuietMs) continue;
        orphans.push(summary.executionId);
      }
      for (const executionId of await this.resumeLeased(orphans, 'recovery')) {
        if (!this.kernel.executions.has(executionId)) continue;
        resumed.push(executionId);
        this.kernel.events.emit('execution:recovered', { nodeId: this.kernel.nodeId, executionId });
      }
    }
    return resumed;
  }

  /**
   * Leases `executionIds` in one batch, then resumes the ones granted, one at a time; returns
   * those whose resume succeeded. A lease for an execution that is not driven here afterwards
   * (it had settled, another driver started) is released.
   */
  private async resumeLeased(
    executionIds: readonly string[],
    cause: 'timer' | 'recovery',
  ): Promise<string[]> {
    if (executionIds.length === 0) return [];
    let leased: Set<string>;
    try {
      leased = (await this.kernel.leases?.acquireAll(executionIds)) ?? new Set(executionIds);
    } catch (error) {
      this.kernel.report(error);
      return [];
    }
    const resumed: string[] = [];
    for (const executionId of executionIds) {
      if (!leased.has(executionId)) continue;
      try {
        await this.kernel.executions.resume(executionId);
        resumed.push(executionId);
        this.kernel.events.emit('execution:resumed', {
          nodeId: this.kernel.nodeId,
          executionId,
          cause,
        });
      } catch (error) {
        this.kernel.report(error);
      }
      if (!this.kernel.executions.has(executionId)) this.kernel.leases?.release(executionId);
    }
    return resumed;
  }
}
