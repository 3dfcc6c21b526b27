import type { Lease, LeaseStore } from '@loom/event-runtime';
import type { StoreLink } from './internal/store-link.js';

/**
 * One node's handle on the shared lease store: latency each way, and no answer while the node
 * is paused. Leases expire by the shared virtual clock, so a paused node loses them.
 */
export class SimLeaseStore implements LeaseStore {
  constructor(
    private readonly inner: LeaseStore,
    private readonly link: StoreLink,
  ) {}

  acquireMany(owner: string, executionIds: readonly string[], ttlMs: number): Promise<Set<string>> {
    return this.link.pass(() => this.inner.acquireMany(owner, executionIds, ttlMs));
  }

  renewMany(owner: string, executionIds: readonly string[], ttlMs: number): Promise<string[]> {
    return this.link.pass(() => this.inner.renewMany(owner, executionIds, ttlMs));
  }

  releaseMany(owner: string, executionIds: readonly string[]): Promise<void> {
    return this.link.pass(() => this.inner.releaseMany(owner, executionIds));
  }

  get(executionId: string): Promise<Lease | undefined> {
    return this.link.pass(() => this.inner.get(executionId));
  }

  async close(): Promise<void> {}
}
