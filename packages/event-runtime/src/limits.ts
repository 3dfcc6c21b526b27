/**
 * Every store enforces these limits before it writes anything. Each one is a named constant
 * and breaking it throws `LIMIT_EXCEEDED` naming the limit, so a caller can tell which.
 */
export const Limits = {
  /** Bytes of one event's payload in its stored JSON form (UTF-8). 1 MiB: large blobs belong in a content store. */
  payloadBytesMax: 1024 * 1024,
  /** Envelopes in one `append` call. Keeps one statement and one transaction bounded. */
  eventsPerAppendMax: 1000,
  /** Characters of an execution id. Ids are keys in every index; 200 keeps them cheap. */
  executionIdLengthMax: 200,
  /** Characters of an event type name. */
  eventTypeLengthMax: 200,
  /** Nesting depth of a payload. Deeper structures are almost always a bug (or a cycle). */
  payloadDepthMax: 512,
  /** Characters of a signal name or a signal idempotency key. */
  signalNameLengthMax: 200,
  /** Rows one `read` / `readAll` call returns when no `limit` is given, and the most it may ask. */
  readLimitMax: 10_000,
  /** Flows one `claimDue` may name (`options.flows`). Bounds the claim's filter. */
  claimFlowsMax: 1000,
  /** Execution ids in one `acquireMany` / `renewMany` / `releaseMany`. Bounds one statement and one transaction. */
  leaseBatchMax: 10_000,
  /** Bytes of one snapshot's state in its stored JSON form (UTF-8). 16 MiB: a bigger state is a design smell. */
  snapshotBytesMax: 16 * 1024 * 1024,
  /** Characters of a queue name. Short, so `queue:<queue>:<itemId>` stays a valid execution id. */
  queueNameLengthMax: 64,
  /** Characters of a queue item id (64 + 128 + the `queue::` frame fit in executionIdLengthMax). */
  queueItemIdLengthMax: 128,
  /** Characters of a queue item's dedupe key or partition key. Both are index keys. */
  queueKeyLengthMax: 200,
  /**
   * Window of a queue item's per-key throttle or dedupe window (`idempotency`), in ms (30 days).
   * Every claim of a throttled key counts the key's claims within the window, so an unbounded
   * window would count forever.
   */
  queueThrottleWindowMsMax: 2_592_000_000,
  /** Absolute value of a queue item's priority. Keeps priorities a plain 32-bit integer column. */
  queuePriorityMax: 1_000_000,
  /** Items one `claim` may return, and item ids in one `renew` / `complete`. Bounds one transaction. */
  queueBatchMax: 1000,
  /**
   * Claimable items one `claim` examines, best first. Bounds the claim's scan when partition
   * limits skip many items; items behind them wait for a later claim.
   */
  queueClaimScanMax: 1000,
  /** Queues one `listQueues` call returns, and its default. Bounds one aggregate query's result. */
  queueListMax: 1000,
  /**
   * Characters of a cancel reason. The reason goes into the cancelled terminal event, so it is
   * checked before a cancel starts: a reason too big for that event would strand the execution.
   */
  cancelReasonLengthMax: 4096,
} as const;

export type LimitName = keyof typeof Limits;
