import type { CancelTimer, Clock } from '../clock.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { LeaseStore, NodeClaim } from '../lease-store.js';
import type { RuntimeEvents } from './runtime-events.js';

/** First wait before claiming the id again after the claim was lost; doubled per failed try. */
export const reclaimDelayFirstMs = 50;
/** Longest wait between two tries at claiming the id again (ADR 0044). */
export const reclaimDelayMaxMs = 1_000;

/** What a {@link NodePresence} works with. */
export interface NodePresenceDeps {
  readonly leaseStore: LeaseStore;
  readonly nodeId: string;
  readonly clock: Clock;
  readonly events: RuntimeEvents;
  /** Where background failures go (`store:error` and `onError`). */
  readonly report: (error: unknown) => void;
  /**
   * The claim is held again after a loss, before `node:claimed` and before waiting starts and
   * resumes go on (recovery restarts its confirmation windows here: ADR 0055).
   */
  readonly onRegained?: () => void;
}

/**
 * This node's claim on its `nodeId` in the lease store (`LeaseStore.claimNode`): what lets other
 * nodes — and this node's own next incarnation — tell at once that it died, instead of waiting
 * for its leases to expire. Claimed before the node writes anything it could be asked about (its
 * first start or resume), released at shutdown.
 *
 * The claim is watched (`NodeClaim.lost`): when it ends while the process lives (its Postgres
 * session was terminated), others read this node as dead, so it reports `NODE_CLAIM_LOST`
 * (`node:claim_lost` and `onError`), takes no new work (`lost` is true: starts and resumes wait
 * for the claim, recovery rounds, timer polls and queue claims are skipped), and claims the id
 * again with backoff on the clock until it holds it (`node:claimed`). ADR 0044.
 */
export class NodePresence {
  private claim: NodeClaim | undefined;
  private claiming: Promise<void> | undefined;
  private settled = false;
  private released = false;
  /** Set while the claim is lost: resolves once it is held again (or the node shuts down). */
  private regained: { promise: Promise<void>; resolve: () => void } | undefined;
  private reclaimTimer: CancelTimer | undefined;
  private attempts = 0;

  constructor(private readonly deps: NodePresenceDeps) {}

  /** True while this node holds its claim: leases under its `nodeId` are this process's own. */
  get claimed(): boolean {
    return this.claim !== undefined;
  }

  /** True while the claim is lost and not yet held again: this node takes no new work. */
  get lost(): boolean {
    return this.regained !== undefined;
  }

  /**
   * Resolves once the claim was made (or refused: another live process holds the id, reported
   * as `NODE_ID_IN_USE`, and the node goes on without it). Undefined once that is decided, so
   * the hot path pays nothing. Rejects with the store's error if the claim could not be asked
   * for; the next call asks again. While a lost claim is being made again, resolves once it is.
   */
  ready(): Promise<void> | undefined {
    if (this.regained !== undefined) return this.regained.promise;
    if (this.settled) return undefined;
    const { leaseStore, nodeId } = this.deps;
    this.claiming ??= leaseStore
      .claimNode(nodeId)
      .then((claim) => {
        this.settled = true;
        if (this.released) {
          void claim?.release();
          return;
        }
        if (claim !== undefined) {
          this.hold(claim);
          return;
        }
        this.deps.report(
          new LoomError(
            ErrorCode.NODE_ID_IN_USE,
            `another live process holds node id '${nodeId}' in the lease store: give ` +
              'each process its own nodeId (or leave it unset); until then this node waits ' +
              'out leases instead of recognising its own',
            { nodeId },
          ),
        );
      })
      .finally(() => {
        this.claiming = undefined;
      });
    return this.claiming;
  }

  /** Gives the claim up (shutdown): the node reads as dead at once. */
  async release(): Promise<void> {
    this.released = true;
    this.reclaimTimer?.();
    this.reclaimTimer = undefined;
    this.regained?.resolve();
    this.regained = undefined;
    await this.claiming?.catch(() => undefined);
    const claim = this.claim;
    this.claim = undefined;
    await claim?.release();
  }

  private hold(claim: NodeClaim): void {
    this.claim = claim;
    void claim.lost?.then(() => this.onLost(claim));
  }

  private onLost(claim: NodeClaim): void {
    if (this.released || this.claim !== claim) return;
    this.claim = undefined;
    // Its session is gone; ending it frees the client (the advisory lock went with the session).
    void claim.release().catch(() => undefined);
    let resolve: () => void = () => undefined;
    const promise = new Promise<void>((done) => {
      resolve = done;
    });
    this.regained = { promise, resolve };
    this.attempts = 0;
    const { nodeId, events, report } = this.deps;
    const error = new LoomError(
      ErrorCode.NODE_CLAIM_LOST,
      `node ${nodeId} lost its claim on its id in the lease store (its claim session ended): ` +
        'other nodes read it as dead until it claims the id again; it takes no new work meanwhile',
      { nodeId },
    );
    events.emit('node:claim_lost', { nodeId, error });
    report(error);
    this.scheduleReclaim(0);
  }

  private scheduleReclaim(delayMs: number): void {
    this.reclaimTimer = this.deps.clock.setTimer(() => {
      this.reclaimTimer = undefined;
      void this.reclaim(Math.min(Math.max(delayMs * 2, reclaimDelayFirstMs), reclaimDelayMaxMs));
    }, delayMs);
  }

  private async reclaim(nextDelayMs: number): Promise<void> {
    if (this.released) return;
    this.attempts++;
    let claim: NodeClaim | undefined;
    try {
      claim = await this.deps.leaseStore.claimNode(this.deps.nodeId);
    } catch (error) {
      if (!this.released) {
        this.deps.report(error);
        this.scheduleReclaim(nextDelayMs);
      }
      return;
    }
    if (this.released) {
      await claim?.release();
      return;
    }
    // Undefined: the ended session's lock is still seen (Postgres frees it as the backend
    // exits), or, against the rules, another live process took this id. Try again.
    if (claim === undefined) {
      this.scheduleReclaim(nextDelayMs);
      return;
    }
    this.hold(claim);
    this.deps.onRegained?.();
    const regained = this.regained;
    this.regained = undefined;
    this.deps.events.emit('node:claimed', { nodeId: this.deps.nodeId, attempts: this.attempts });
    regained?.resolve();
  }
}
