/**
 * The SQL of the SQLite queue store, one statement per constant (prepared once per store in
 * sqlite-queue-store.ts).
 */

export const insertSql = `
  INSERT INTO loom_queue_items
    (queue, item_id, flow, version, input, priority, dedupe_key, partition_key, partition_limit,
     throttle_key, throttle_count, throttle_window_ms, idempotency_key, idempotency_until_ms,
     debounce_key, due_at_ms, debounce_deadline_ms, status, enqueued_at_ms)
  VALUES (@queue, @itemId, @flow, @version, @inputText, @priority, @dedupeKey, @partitionKey,
    @partitionConcurrencyMax, @throttleKey, @throttleCount, @throttleWindowMs, @idempotencyKey,
    @nowMs + @idempotencyWindowMs, @debounceKey, @nowMs + @debouncePeriodMs,
    @nowMs + @debounceMaxWaitMs, 'pending', @nowMs)
  ON CONFLICT DO NOTHING
  RETURNING item_id`;

/** The item an enqueue collided with: the same id first, else the unfinished one with the key. */
export const existingSql = `
  SELECT item_id FROM loom_queue_items
  WHERE queue = @queue AND (item_id = @itemId OR (dedupe_key = @dedupeKey AND status <> 'done'))
  ORDER BY item_id = @itemId DESC LIMIT 1`;

/** The item whose dedupe window for a key is open (enqueue runs it in its IMMEDIATE transaction). */
export const idempotentSql = `
  SELECT item_id FROM loom_queue_items
  WHERE queue = @queue AND idempotency_key = @idempotencyKey AND idempotency_until_ms > @nowMs
  ORDER BY idempotency_until_ms DESC LIMIT 1`;

/**
 * A debounced enqueue of a key whose item is still pending: the newer input, and the due time
 * pushed to now + period, never past the item's deadline (enqueue runs it in its IMMEDIATE
 * transaction, before the insert). Serves: loom_queue_items_debounce.
 */
export const debounceSql = `
  UPDATE loom_queue_items
  SET input = @inputText,
      due_at_ms = min(@nowMs + @debouncePeriodMs, coalesce(debounce_deadline_ms, @nowMs + @debouncePeriodMs))
  WHERE queue = @queue AND debounce_key = @debounceKey AND status = 'pending'
  RETURNING item_id`;

/** Live claims of a queue per partition (for the concurrency limits). */
export const runningSql = `
  SELECT partition_key, count(*) AS n FROM loom_queue_items
  WHERE queue = ? AND status = 'running' AND claim_expires_at_ms > ?
  GROUP BY partition_key`;

/** Items of a queue started since a time (for the rate limit window). */
export const startedSql = `
  SELECT count(*) FROM loom_queue_items WHERE queue = ? AND started_at_ms > ?`;

/**
 * Claimable items of a queue: pending or with an expired claim, due (a debounced item waits for
 * its `due_at_ms`), by priority then age; with
 * `@flows` (JSON `[[name, version], …]`), only items of those flows (`IS`: a null version matches).
 * An item whose partition already runs its limit (the lower of its own `partition_limit` and the
 * claim's `@partitionMax`) is skipped here, so a saturated key never fills the scan window and
 * holds back the keys behind it (each such row costs one probe of loom_queue_items_running).
 * A throttled item whose key was claimed `throttle_count` times within its window is skipped the
 * same way; `throttleStarted` is that count (one probe of loom_queue_items_throttled per
 * throttled row), which the pick then raises by its own picks of the key.
 */
export const candidatesSql = `
  SELECT item_id AS itemId, partition_key AS partitionKey,
    partition_limit AS partitionConcurrencyMax, throttle_key AS throttleKey,
    throttle_count AS throttleCount, throttleStarted
  FROM (SELECT c.*, CASE WHEN c.throttle_key IS NULL THEN 0
          ELSE (SELECT count(*) FROM loom_queue_items AS t
                WHERE t.queue = @queue AND t.throttle_key = c.throttle_key
                  AND t.started_at_ms > @nowMs - c.throttle_window_ms) END AS throttleStarted
        FROM loom_queue_items AS c) AS c
  WHERE queue = @queue AND status <> 'done' AND (status = 'pending' OR claim_expires_at_ms <= @nowMs)
    AND (due_at_ms IS NULL OR due_at_ms <= @nowMs)
    AND (@flows IS NULL OR EXISTS (SELECT 1 FROM json_each(@flows) f
      WHERE json_extract(f.value, '$[0]') = flow AND json_extract(f.value, '$[1]') IS version))
    AND (c.partition_key IS NULL OR coalesce(c.partition_limit, @partitionMax) IS NULL
      OR (SELECT count(*) FROM loom_queue_items AS r
          WHERE r.queue = @queue AND r.partition_key = c.partition_key AND r.status = 'running'
            AND r.claim_expires_at_ms > @nowMs)
         < min(coalesce(c.partition_limit, @partitionMax), coalesce(@partitionMax, c.partition_limit)))
    AND (c.throttle_key IS NULL OR c.throttleStarted < c.throttle_count)
  ORDER BY priority DESC, seq LIMIT @limit`;

/** Claims the chosen items for an owner and returns them. */
export const takeSql = `
  UPDATE loom_queue_items
  SET status = 'running', owner = @owner, claim_expires_at_ms = @expiresAtMs,
      started_at_ms = @nowMs, attempts = attempts + 1
  WHERE queue = @queue AND item_id IN (SELECT value FROM json_each(@ids))
  RETURNING *`;

/** Extends an owner's live claims; RETURNING lists the renewed. */
export const renewSql = `
  UPDATE loom_queue_items SET claim_expires_at_ms = @expiresAtMs
  WHERE queue = @queue AND item_id IN (SELECT value FROM json_each(@ids))
    AND status = 'running' AND owner = @owner AND claim_expires_at_ms > @nowMs
  RETURNING item_id`;

/** Settles items with an outcome (done items are left alone). */
export const completeSql = `
  UPDATE loom_queue_items SET status = 'done', completed_at_ms = @nowMs, outcome = @outcome
  WHERE queue = @queue AND item_id IN (SELECT value FROM json_each(@ids)) AND status <> 'done'`;

/**
 * Counts per queue in one pass over its items, through loom_queue_items_id (queue, item_id):
 * `queue = ?` for one queue, `queue > ? … LIMIT ?` (in index order) for a page of queues.
 */
export function statsSql(where: string): string {
  return `
  SELECT queue,
    count(*) FILTER (WHERE status <> 'done'
                       AND NOT (status = 'running' AND claim_expires_at_ms > @nowMs)) AS depth,
    count(*) FILTER (WHERE status = 'running' AND claim_expires_at_ms > @nowMs) AS claimed,
    count(*) FILTER (WHERE status = 'done' AND coalesce(outcome, 'completed') = 'completed')
      AS completed,
    count(*) FILTER (WHERE status = 'done' AND outcome = 'failed') AS failed,
    count(*) FILTER (WHERE status = 'done' AND outcome = 'cancelled') AS cancelled
  FROM loom_queue_items
  WHERE ${where}
  GROUP BY queue
  ORDER BY queue
  LIMIT @limit`;
}

/** One item by queue and id. Serves: loom_queue_items_id. */
export const getSql = 'SELECT * FROM loom_queue_items WHERE queue = ? AND item_id = ?';

/**
 * A partition's unfinished items in enqueue order (a cancel-mode singleton's lookup). Serves:
 * loom_queue_items_running for the running ones; pending ones through the queue's ready index.
 */
export const unfinishedOfPartitionSql = `
  SELECT * FROM loom_queue_items
  WHERE queue = ? AND partition_key = ? AND status <> 'done'
  ORDER BY seq LIMIT ?`;
