/** Who drives an execution right now, and until when. */
export interface Lease {
  executionId: string;
  /** The node holding it (a runtime's `nodeId`). */
  owner: string;
  /** Epoch milliseconds after which anyone may take it over. */
  expiresAtMs: number;
}

/**
 * A node's claim on its id in a lease store (see `LeaseStore.claimNode`): held for as long as
 * the process that took it lives, given up by `release()` or by the process dying.
 */
export interface NodeClaim {
  /** The node id claimed. */
  readonly nodeId: string;
  /** Gives the id up (clean shutdown): it reads as dead at once. Idempotent. */
  release(): Promise<void>;
  /**
   * Resolves if the claim ends while this process lives and did not release it (the Postgres
   * session that holds it was terminated, timed out or lost its server): others now read the node
   * as dead, and its holder must claim again. Absent when the claim cannot end that way (a lock
   * file held by the process itself, an in-memory claim).
   */
  readonly lost?: Promise<void>;
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
  /**
   * Claims `nodeId` for this process, so others can tell it is alive: the claim is held by
   * something the operating system or the database frees the moment the process dies (an
   * exclusive lock on a file beside a SQLite database, a session advisory lock in Postgres), so
   * a crashed node reads as dead at once, with no TTL to wait out. Resolves undefined when a live
   * process already holds `nodeId`. Throws `INVALID_ARGUMENT` (bad id), `STORE_CLOSED`,
   * `STORE_UNAVAILABLE`, `STORE_FAILURE`.
   */
  claimNode(nodeId: string): Promise<NodeClaim | undefined>;
  /**
   * Of `nodeIds`, the ones a live process holds a claim on; every other id is dead (its process
   * died or released it) or was never claimed. At most `leaseBatchMax` ids; one round trip.
   * Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `STORE_CLOSED`, `STORE_UNAVAILABLE`.
   */
  liveNodes(nodeIds: readonly string[]): Promise<Set<string>>;
  /**
   * How many node ids live processes hold claims on in this store, the caller's own included.
   * One round trip. Throws `STORE_CLOSED`, `STORE_UNAVAILABLE`, `STORE_FAILURE`.
   */
  countLiveNodes(): Promise<number>;
  close(): Promise<void>;
}
