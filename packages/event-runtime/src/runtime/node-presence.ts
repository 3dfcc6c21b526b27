import { ErrorCode, LoomError } from '../errors.js';
import type { LeaseStore, NodeClaim } from '../lease-store.js';

/**
 * This node's claim on its `nodeId` in the lease store (`LeaseStore.claimNode`): what lets other
 * nodes — and this node's own next incarnation — tell at once that it died, instead of waiting
 * for its leases to expire. Claimed before the node writes anything it could be asked about (its
 * first start or resume), released at shutdown.
 */
export class NodePresence {
  private claim: NodeClaim | undefined;
  private claiming: Promise<void> | undefined;
  private settled = false;
  private released = false;

  constructor(
    private readonly leaseStore: LeaseStore,
    private readonly nodeId: string,
    private readonly report: (error: unknown) => void,
  ) {}

  /** True while this node holds its claim: leases under its `nodeId` are this process's own. */
  get claimed(): boolean {
    return this.claim !== undefined;
  }

  /**
   * Resolves once the claim was made (or refused: another live process holds the id, reported
   * as `NODE_ID_IN_USE`, and the node goes on without it). Undefined once that is decided, so
   * the hot path pays nothing. Rejects with the store's error if the claim could not be asked
   * for; the next call asks again.
   */
  ready(): Promise<void> | undefined {
    if (this.settled) return undefined;
    this.claiming ??= this.leaseStore
      .claimNode(this.nodeId)
      .then((claim) => {
        this.settled = true;
        if (this.released) {
          void claim?.release();
          return;
        }
        this.claim = claim;
        if (claim === undefined) {
          this.report(
            new LoomError(
              ErrorCode.NODE_ID_IN_USE,
              `another live process holds node id '${this.nodeId}' in the lease store: give ` +
                'each process its own nodeId (or leave it unset); until then this node waits ' +
                'out leases instead of recognising its own',
              { nodeId: this.nodeId },
            ),
          );
        }
      })
      .finally(() => {
        this.claiming = undefined;
      });
    return this.claiming;
  }

  /** Gives the claim up (shutdown): the node reads as dead at once. */
  async release(): Promise<void> {
    this.released = true;
    await this.claiming?.catch(() => undefined);
    const claim = this.claim;
    this.claim = undefined;
    await claim?.release();
  }
}
