/** Who drives an execution right now, and until when. */
export interface Lease {
  executionId: string;
  /** The node holding it (a runtime's `nodeId`). */
  owner: string;
  /** Epoch milliseconds after which anyone may take it over. */
  expiresAtMs: number;
}

/**
 * Leases on executions, batched: a node renews all of its leases in one `renewMany` per tick
 * and group-commits acquires and releases, so lease traffic is per node, not per execution.
 * Expiry is judged by the store's injected clock.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` for bad ids, `INVALID_ARGUMENT` for a bad
 * ttl or owner, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`.
 */
export interface LeaseStore {
  /**
   * Take the leases that are free, expired, or already held by `owner` (which extends them).
   * Returns the ids granted; the others are held by someone else. One round trip.
   */
  acquireMany(owner: string, executionIds: readonly string[], ttlMs: number): Promise<Set<string>>;
  /**
   * Extend the leases `owner` still holds. Returns the ids it no longer holds (expired and taken
   * over, or released by an operator): the caller must stop driving those. One round trip.
   */
  renewMany(owner: string, executionIds: readonly string[], ttlMs: number): Promise<string[]>;
  /** Give up leases held by `owner`; leases held by others are left alone. One round trip. */
  releaseMany(owner: string, executionIds: readonly string[]): Promise<void>;
  /** The current lease, expired or not; undefined if none was ever taken or it was released. */
  get(executionId: string): Promise<Lease | undefined>;
  close(): Promise<void>;
}
