import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { checkLeaseBatch, checkLeaseOwner, leaseExpiry } from '../../internal/lease-input.js';
import { checkNodeBatch, ProcessNodeClaims } from '../../internal/node-claims.js';
import { checkExecutionId } from '../../internal/prepare-append.js';
import type { Lease, LeaseStore, NodeClaim } from '../../lease-store.js';

/** Options of {@link InMemoryLeaseStore}. */
export interface InMemoryLeaseStoreOptions {
  /** Judges expiry and computes new expiries. Default: the wall clock. */
  clock?: Clock;
}

interface LeaseRow {
  owner: string;
  expiresAtMs: number;
}

/**
 * Leases in process memory: for tests, simulation and single-process runtimes. Same contract as
 * the durable backends (one conformance suite). A lease is expired once
 * `expiresAtMs <= clock.now()`; until someone else takes it, its owner still holds it and may
 * renew it.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` (bad id, batch over `leaseBatchMax`),
 * `INVALID_ARGUMENT` (bad owner, ttl or id array), `STORE_CLOSED`.
 *
 * @example
 * const leases = new InMemoryLeaseStore();
 * const granted = await leases.acquireMany('node-a', ['order-1', 'order-2'], 30_000);
 * const lost = await leases.renewMany('node-a', [...granted], 30_000);
 * await leases.releaseMany('node-a', [...granted]);
 */
export class InMemoryLeaseStore implements LeaseStore {
  readonly backend = 'memory';
  private readonly clock: Clock;
  private readonly leases = new Map<string, LeaseRow>();
  private readonly nodes = new ProcessNodeClaims();
  private closed = false;

  constructor(options: InMemoryLeaseStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Grants each id that has no lease, whose lease expired, or that `owner` already holds (the
   * expiry becomes now + ttl). Returns the ids granted.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_CLOSED`.
   */
  async acquireMany(
    owner: string,
    executionIds: readonly string[],
    ttlMs: number,
  ): Promise<Set<string>> {
    this.assertOpen();
    const nowMs = this.clock.now();
    checkLeaseOwner(owner);
    const expiresAtMs = leaseExpiry(ttlMs, nowMs);
    const ids = checkLeaseBatch(executionIds, 'acquireMany');
    const granted = new Set<string>();
    for (const executionId of ids) {
      const lease = this.leases.get(executionId);
      if (lease === undefined || lease.expiresAtMs <= nowMs || lease.owner === owner) {
        this.leases.set(executionId, { owner, expiresAtMs });
        granted.add(executionId);
      }
    }
    return granted;
  }

  /**
   * Extends each lease `owner` holds, expired or not (nobody took it, so it is still the
   * owner's). Returns the ids not renewed: held by someone else, or released.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_CLOSED`.
   */
  async renewMany(
    owner: string,
    executionIds: readonly string[],
    ttlMs: number,
  ): Promise<string[]> {
    this.assertOpen();
    checkLeaseOwner(owner);
    const expiresAtMs = leaseExpiry(ttlMs, this.clock.now());
    const ids = checkLeaseBatch(executionIds, 'renewMany');
    const lost: string[] = [];
    for (const executionId of ids) {
      const lease = this.leases.get(executionId);
      if (lease?.owner === owner) lease.expiresAtMs = expiresAtMs;
      else lost.push(executionId);
    }
    return lost;
  }

  /**
   * Deletes the leases `owner` holds among `executionIds`; others' leases stay.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_CLOSED`.
   */
  async releaseMany(owner: string, executionIds: readonly string[]): Promise<void> {
    this.assertOpen();
    checkLeaseOwner(owner);
    for (const executionId of checkLeaseBatch(executionIds, 'releaseMany')) {
      if (this.leases.get(executionId)?.owner === owner) this.leases.delete(executionId);
    }
  }

  /**
   * The lease on `executionId` (a fresh object), expired or not; undefined when there is none.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_CLOSED`.
   */
  async get(executionId: string): Promise<Lease | undefined> {
    this.assertOpen();
    const lease = this.leases.get(checkExecutionId(executionId));
    return lease === undefined ? undefined : { executionId, ...lease };
  }

  /**
   * Claims `nodeId` until the claim is released (the store lives and dies with this process, so
   * release is the only way a claim ends). Resolves undefined when it is held already.
   * Throws `INVALID_ARGUMENT`, `STORE_CLOSED`.
   */
  async claimNode(nodeId: string): Promise<NodeClaim | undefined> {
    this.assertOpen();
    return this.nodes.claim(checkLeaseOwner(nodeId, 'nodeId'));
  }

  /**
   * The ids among `nodeIds` with a claim held. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`,
   * `STORE_CLOSED`.
   */
  async liveNodes(nodeIds: readonly string[]): Promise<Set<string>> {
    this.assertOpen();
    return this.nodes.live(checkNodeBatch(nodeIds));
  }

  /** How many node ids are claimed. Throws `STORE_CLOSED`. */
  async countLiveNodes(): Promise<number> {
    this.assertOpen();
    return this.nodes.count;
  }

  /** Further calls fail with `STORE_CLOSED`. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new LoomError(ErrorCode.STORE_CLOSED, 'the memory lease store is closed', {
        backend: this.backend,
      });
    }
  }
}
