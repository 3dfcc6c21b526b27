import type { FlowKey, JsonValue } from './envelope.js';

/** Where a queue item stands: waiting, claimed by a worker, or finished. */
export type QueueItemStatus = 'pending' | 'running' | 'done';

/** How a finished item ended, as `complete` was told (the workflow layer: its execution's end). */
export type QueueItemOutcome = 'completed' | 'failed' | 'cancelled';

/** What `enqueue` takes: one unit of work, a flow to run on an input. */
export interface EnqueueInput {
  /** The queue (1 to `Limits.queueNameLengthMax` characters). */
  queue: string;
  /**
   * Caller-chosen id, unique in the queue forever (1 to `Limits.queueItemIdLengthMax`
   * characters): enqueueing it again is a duplicate, even after it finished. Default: a ULID.
   */
  itemId?: string;
  /** The flow's name, as registered with the runtime that will run the item. */
  flow: string;
  /** The flow's version; `null` or absent for an unversioned flow. */
  version?: string | null;
  /** The flow's input: JSON-representable (`PAYLOAD_NOT_JSON`), at most `payloadBytesMax`. */
  input: JsonValue;
  /** Higher runs first; ties run in enqueue order. Integer within ±`queuePriorityMax`. Default 0. */
  priority?: number;
  /** Unique among the queue's unfinished items: a second enqueue with it is a duplicate. */
  dedupeKey?: string;
  /** Items with the same key share `partitionConcurrencyMax`; items without one are not limited by it. */
  partitionKey?: string;
  /**
   * The most items of this item's partition running at once (live claims of every worker) when
   * this item is claimed: a positive integer, stored with the item, so every worker enforces it
   * whatever it claims with (the lower of this and the claim's `partitionConcurrencyMax` holds).
   * Needs `partitionKey`. The workflow layer's per-key `concurrency` writes it.
   */
  partitionConcurrencyMax?: number;
  /**
   * A throttle per key, stored with the item: it is claimed only while fewer than `count` items of
   * the queue with the same `throttle.key` were claimed within the last `windowMs` (every worker's
   * claims, finished items included). Items over it wait (they are delayed, never dropped). The
   * workflow layer's per-key `throttle` writes it (ADR 0059).
   */
  throttle?: QueueThrottle;
  /**
   * A dedupe window for starts: while an item of the queue enqueued with the same
   * `idempotency.key` is within its window (`windowMs` from its enqueue, finished or not), this
   * enqueue writes nothing and answers that item (`duplicate: true`). The workflow layer's
   * `idempotency` writes it (ADR 0059).
   */
  idempotency?: QueueIdempotency;
  /**
   * Debounce by key: while an item of the queue enqueued with the same `debounce.key` is still
   * `pending` (never claimed), this enqueue writes no new item: it replaces that item's input with
   * this one and pushes the item's due time to `now + periodMs` (capped at its first enqueue +
   * `maxWaitMs`), and answers it (`duplicate: true`). An item is not claimed before its due time,
   * so it runs once, with the last input, after `periodMs` without a newer enqueue. Once claimed,
   * the next enqueue of the key writes a new item. Not with `dedupeKey` or `idempotency`
   * (`INVALID_ARGUMENT`). The workflow layer's `debounce` writes it (ADR 0059).
   */
  debounce?: QueueDebounce;
}

/**
 * A debounce: `key` (1 to `Limits.queueKeyLengthMax` characters), `periodMs` (a positive integer
 * up to `Limits.queueThrottleWindowMsMax`) and optionally `maxWaitMs` (at least `periodMs`, at
 * most the same limit): how long after its first enqueue the item becomes due at the latest.
 */
export interface QueueDebounce {
  key: string;
  periodMs: number;
  maxWaitMs?: number;
}

/**
 * A dedupe window: `key` (1 to `Limits.queueKeyLengthMax` characters) and `windowMs` (a positive
 * integer, at most `Limits.queueThrottleWindowMsMax`) from the item's enqueue.
 */
export interface QueueIdempotency {
  key: string;
  windowMs: number;
}

/**
 * A per-key throttle: at most `count` claims per sliding window of `windowMs` among the queue's
 * items with the same `key` (1 to `Limits.queueKeyLengthMax` characters; `count` and `windowMs`
 * positive integers, `windowMs` at most `Limits.queueThrottleWindowMsMax`).
 */
export interface QueueThrottle {
  key: string;
  count: number;
  windowMs: number;
}

/** What `enqueue` did: `duplicate` means nothing was written and `itemId` names the existing item. */
export interface EnqueueResult {
  itemId: string;
  duplicate: boolean;
}

/** A queue item as stored (a fresh copy). */
export interface QueueItem {
  queue: string;
  itemId: string;
  flow: string;
  version: string | null;
  input: JsonValue;
  priority: number;
  dedupeKey: string | null;
  partitionKey: string | null;
  /** The item's own limit on its partition's live claims (`EnqueueInput.partitionConcurrencyMax`). */
  partitionConcurrencyMax: number | null;
  /** The item's own per-key throttle (`EnqueueInput.throttle`), null for none. */
  throttle: QueueThrottle | null;
  /** The item's dedupe window: its key and the epoch ms it ends (exclusive), null for none. */
  idempotency: { key: string; untilMs: number } | null;
  /**
   * The item's debounce: its key, the epoch ms before which it is not claimed (`dueAtMs`, pushed
   * by every debounced enqueue of the key while pending) and the latest it may be pushed to
   * (`deadlineMs`, first enqueue + `maxWaitMs`; null without one). Null for none.
   */
  debounce: { key: string; dueAtMs: number; deadlineMs: number | null } | null;
  status: QueueItemStatus;
  /** The worker holding the claim (`running`), else the last one that did, else null. */
  owner: string | null;
  /** Epoch ms after which a `running` item is claimable again unless renewed. */
  claimExpiresAtMs: number | null;
  /** Epoch ms of the latest claim: what the rate limit and the throttle count. */
  startedAtMs: number | null;
  /** How many times the item was claimed (more than 1 after an expired claim). */
  attempts: number;
  enqueuedAtMs: number;
  completedAtMs: number | null;
  /** How it ended once `done` (null before, and for items finished before outcomes were kept). */
  outcome: QueueItemOutcome | null;
}

/** One queue's counts, from one query over its items. */
export interface QueueStats {
  queue: string;
  /** Items waiting to be claimed: pending ones, and claimed ones whose claim expired. */
  depth: number;
  /** Items under a live claim (running on some worker now). */
  claimed: number;
  /** Finished items that completed (or finished without an outcome recorded). */
  completed: number;
  /** Finished items whose run failed. */
  failed: number;
  /** Finished items whose run was cancelled. */
  cancelled: number;
}

/** What `listQueues` returns: queues by name, after a cursor. */
export interface ListQueuesOptions {
  /** Only queues whose name sorts after this one (the previous page's last name). */
  afterQueue?: string;
  /** Most queues to return, 1 to `Limits.queueListMax`. Default `Limits.queueListMax`. */
  limit?: number;
}

/** A rate limit: at most `count` claims per sliding window of `windowMs`. */
export interface QueueRate {
  count: number;
  windowMs: number;
}

/** What one `claim` may take. Limits are global: they count every worker's claims on the queue. */
export interface ClaimOptions {
  /** The worker claiming (1 to 200 characters); `renew` must name it. */
  owner: string;
  /** Items this call may return, 1 to `Limits.queueBatchMax`. */
  limit: number;
  /** Items of the queue running at once (live claims of all workers), a positive integer. */
  concurrencyMax?: number;
  /**
   * Items running at once per `partitionKey`, a positive integer. An item enqueued with its own
   * `partitionConcurrencyMax` is held to the lower of the two.
   */
  partitionConcurrencyMax?: number;
  /** Claims started within the last `windowMs` stay below `count` (a sliding window). */
  rate?: QueueRate;
  /** A claim not renewed or completed within this many ms becomes claimable again. */
  claimTtlMs: number;
  /**
   * Claim only items of these flows (name and version): a worker takes what its runtime can run
   * and leaves the rest for a worker that can (a rolling upgrade). Omitted: every flow. At most
   * `Limits.claimFlowsMax` entries.
   */
  flows?: readonly FlowKey[];
}

/**
 * Durable work queues with global limits, beside the event log (same SQLite file, same Postgres
 * pool). Workers `claim` items atomically: highest priority first, then enqueue order, never
 * letting the queue's live claims reach `concurrencyMax`, a partition's reach
 * `partitionConcurrencyMax`, the claims started within `rate.windowMs` reach `rate.count`, or a
 * throttle key's claims within its item's `throttle.windowMs` reach its `throttle.count`,
 * however many processes claim at once. A claim lives `claimTtlMs`; `renew` extends it,
 * `complete` finishes the item; an expired claim is claimable again (at-least-once delivery, so
 * run items idempotently: the workflow layer starts execution `queue:<queue>:<itemId>`).
 * Time is judged by the store's injected clock.
 *
 * Error codes: `INVALID_ARGUMENT` (bad name, id, key, priority, options), `LIMIT_EXCEEDED`
 * (a named `Limits` entry), `PAYLOAD_NOT_JSON`, `STORE_BUSY`, `STORE_UNAVAILABLE`,
 * `STORE_CLOSED`, `SCHEMA_NOT_MIGRATED`, `STORE_FAILURE`.
 */
export interface QueueStore {
  /**
   * Add an item, or report the existing one (same `itemId`, same unfinished `dedupeKey`, an
   * item whose `idempotency` window for the same key is still open, or the pending item of the
   * same `debounce` key, which this enqueue's input and due time replace).
   */
  enqueue(input: EnqueueInput): Promise<EnqueueResult>;
  /**
   * Claim up to `options.limit` pending (or expired-claim) items within the limits, in one
   * transaction. Returns them ordered by priority desc, then enqueue order; empty when none fit.
   */
  claim(queue: string, options: ClaimOptions): Promise<QueueItem[]>;
  /**
   * Extend `owner`'s live claims by `claimTtlMs` from now. Returns the ids not renewed (expired,
   * claimed by another worker, completed, unknown), in batch order: stop tracking those. An
   * expired claim cannot be renewed, so it never counts against the limits twice.
   */
  renew(
    queue: string,
    owner: string,
    itemIds: readonly string[],
    claimTtlMs: number,
  ): Promise<string[]>;
  /**
   * Mark items done (whoever holds them) with how they ended (default `completed`); unknown and
   * already-done ids are ignored, so a done item keeps its first outcome.
   */
  complete(queue: string, itemIds: readonly string[], outcome?: QueueItemOutcome): Promise<void>;
  /** The item, whatever its status; undefined when the queue has no such item. */
  get(queue: string, itemId: string): Promise<QueueItem | undefined>;
  /**
   * The queue's unfinished items (pending or running) with this `partitionKey`, in enqueue
   * order, at most `Limits.queueBatchMax`: what a singleton with `mode: 'cancel'` reads to find
   * the runs a newer one replaces (ADR 0059).
   */
  unfinishedOfPartition(queue: string, partitionKey: string): Promise<QueueItem[]>;
  /** The queue's counts by the store's clock (all zero for a queue nothing was enqueued into). */
  queueStats(queue: string): Promise<QueueStats>;
  /** The counts of every queue that has items, by name, one query per page. */
  listQueues(options?: ListQueuesOptions): Promise<QueueStats[]>;
  close(): Promise<void>;
}
