import type { Lease, LeaseStore, NodeClaim } from '@loom/event-runtime';
import type { StoreLink } from './internal/store-link.js';

/**
 * One node's handle on the shared lease store: latency each way, no answer while the node
 * is paused, and the node's torn connections (a call refused while it reconnects, or torn with
 * its outcome unknown). Leases expire by the shared virtual clock, so a paused node loses them. A node's
 * claim on its id is dropped when the node is killed, as the OS drops a dead process's lock.
 */
export class SimLeaseStore implements LeaseStore {
  private readonly claims: NodeClaim[] = [];

  constructor(
    private readonly inner: LeaseStore,
    private readonly link: StoreLink,
  ) {}

  acquireMany(owner: string, executionIds: readonly string[], ttlMs: number): Promise<Set<string>> {
    return this.link.pass('acquireMany', () => this.inner.acquireMany(owner, executionIds, ttlMs));
  }

  renewMany(owner: string, executionIds: readonly string[], ttlMs: number): Promise<string[]> {
    return this.link.pass('renewMany', () => this.inner.renewMany(owner, executionIds, ttlMs));
  }

  releaseMany(owner: string, executionIds: readonly string[]): Promise<void> {
    return this.link.pass('releaseMany', () => this.inner.releaseMany(owner, executionIds));
  }

  get(executionId: string): Promise<Lease | undefined> {
    return this.link.pass('get', () => this.inner.get(executionId));
  }

  async claimNode(nodeId: string): Promise<NodeClaim | undefined> {
    const claim = await this.link.pass('claimNode', () => this.inner.claimNode(nodeId));
    if (claim !== undefined) this.claims.push(claim);
    return claim;
  }

  liveNodes(nodeIds: readonly string[]): Promise<Set<string>> {
    return this.link.pass('liveNodes', () => this.inner.liveNodes(nodeIds));
  }

  countLiveNodes(): Promise<number> {
    return this.link.pass('countLiveNodes', () => this.inner.countLiveNodes());
  }

  /** The node died: its claims go at once, straight on the shared store (no link: it is dead). */
  async dropClaims(): Promise<void> {
    for (const claim of this.claims.splice(0)) await claim.release();
  }

  async close(): Promise<void> {}
}
