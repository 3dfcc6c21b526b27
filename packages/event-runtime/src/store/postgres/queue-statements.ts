import { type PgStatement, statementName } from './pg-statement.js';

/** The statements of `PostgresQueueStore`, built once per store for its schema. */
export interface QueueStatements {
  enqueue: PgStatement;
  existing: PgStatement;
  idempotencyLock: PgStatement;
  idempotent: PgStatement;
  debounce: PgStatement;
  lockQueue: PgStatement;
  claim: PgStatement;
  renew: PgStatement;
  complete: PgStatement;
  get: PgStatement;
  unfinished: PgStatement;
  stats: PgStatement;
  list: PgStatement;
}

/**
 * Insert an item (and its queue's lock row, once); RETURNING is empty for a duplicate id or an
 * unfinished duplicate dedupe key (ON CONFLICT DO NOTHING arbitrates on both unique indexes).
 * `$1` queue … `$8` partition key, `$9` now, `$10` the item's own partition limit (or NULL),
 * `$11`…`$13` its throttle key, count and window (all NULL for none), `$14`/`$15` its
 * idempotency key and window (NULL for none). A debounced item has its own statement.
 */
function enqueueStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-enqueue'),
    text: `WITH lock_row AS (
  INSERT INTO ${q}.queues (queue) VALUES ($1::text) ON CONFLICT DO NOTHING
)
INSERT INTO ${q}.queue_items
  (queue, item_id, flow, version, input, priority, dedupe_key, partition_key, partition_limit,
   throttle_key, throttle_count, throttle_window_ms, idempotency_key, idempotency_until_ms,
   status, enqueued_at_ms)
VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::int, $7::text, $8::text, $10::int,
  $11::text, $12::int, $13::bigint, $14::text, $9::bigint + $15::bigint, 'pending', $9::bigint)
ON CONFLICT DO NOTHING
RETURNING item_id`,
  };
}

/** The item an enqueue collided with: the same id first, else the unfinished one with the key. */
function existingStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-existing'),
    text: `SELECT item_id FROM ${q}.queue_items
WHERE queue = $1::text AND (item_id = $2::text OR (dedupe_key = $3::text AND status <> 'done'))
ORDER BY item_id = $2::text DESC LIMIT 1`,
  };
}

/**
 * The first statement of an idempotent enqueue's transaction: serializes enqueues of one queue
 * and idempotency key (a transaction-scoped advisory lock on their hash; a collision only
 * serializes two keys), so the lookup that follows sees every committed window of the key.
 */
function idempotencyLockStatement(schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-idempotency-lock'),
    text: `SELECT pg_advisory_xact_lock(hashtextextended($1::text || chr(1) || $2::text, 59))`,
  };
}

/** The item whose dedupe window for a key is open. Serves: queue_items_idempotency_idx. */
function idempotentStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-idempotent'),
    text: `SELECT item_id FROM ${q}.queue_items
WHERE queue = $1::text AND idempotency_key = $2::text AND idempotency_until_ms > $3::bigint
ORDER BY idempotency_until_ms DESC LIMIT 1`,
  };
}

/**
 * A debounced enqueue, one statement: insert the item, or, when the key already has a pending
 * item (the conflict on queue_items_debounce_idx, which holds at most one per key), give that
 * item this input and push its due time to now + period, never past its deadline. ON CONFLICT
 * DO UPDATE arbitrates racing enqueues of a key (one inserts, the rest update it, in commit
 * order: the last input wins); a claim that took the row first moved it out of the partial
 * index, so the enqueue inserts a new item. `inserted` tells the two apart. An item id already
 * taken inserts nothing and returns no row (the caller looks it up). Parameters as the enqueue's
 * (`$1`…`$9`, `$10`…`$13` limits and throttle), `$14` debounce key, `$15` period, `$16` max wait
 * (NULL: no cap). Serves: queue_items_pkey, queue_items_debounce_idx.
 */
function debounceStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-debounce'),
    text: `WITH lock_row AS (
  INSERT INTO ${q}.queues (queue) VALUES ($1::text) ON CONFLICT DO NOTHING
)
INSERT INTO ${q}.queue_items AS i
  (queue, item_id, flow, version, input, priority, dedupe_key, partition_key, partition_limit,
   throttle_key, throttle_count, throttle_window_ms, debounce_key, due_at_ms, debounce_deadline_ms,
   status, enqueued_at_ms)
SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::int, $7::text, $8::text, $10::int,
  $11::text, $12::int, $13::bigint, $14::text, $9::bigint + $15::bigint, $9::bigint + $16::bigint,
  'pending', $9::bigint
WHERE NOT EXISTS (SELECT 1 FROM ${q}.queue_items WHERE queue = $1::text AND item_id = $2::text)
ON CONFLICT (queue, debounce_key) WHERE debounce_key IS NOT NULL AND status = 'pending'
DO UPDATE SET input = EXCLUDED.input,
  due_at_ms = LEAST($9::bigint + $15::bigint, i.debounce_deadline_ms)
RETURNING i.item_id, (i.xmax = 0) AS inserted`,
  };
}

/**
 * The first statement of a claim's transaction: serializes the queue's claims (and its renews,
 * which take FOR SHARE) so the counts the claim statement reads next are exact. Under READ
 * COMMITTED the claim statement's snapshot is taken after this lock is granted, so it sees every
 * claim committed before. Serves: queues_pkey.
 */
function lockQueueStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-lock'),
    text: `SELECT 1 FROM ${q}.queues WHERE queue = $1::text FOR UPDATE`,
  };
}

/**
 * The claim, under the queue's row lock. `$1` queue, `$2` owner, `$3` now, `$4` claim expiry,
 * `$5` limit, `$6` concurrencyMax, `$7` partitionConcurrencyMax, `$8` rate count, `$9` window
 * start (now - windowMs): `$6`…`$9` may be NULL, and LEAST ignores the NULL terms. `$10` the scan
 * limit; `$11`/`$12` the flows to claim (names and versions side by side), NULL for every flow. Live claims
 * (`running`) and claims started in the window set the budget; candidates (pending, or running
 * with an expired claim; due: a debounced item waits for its `due_at_ms`) are scanned best first via queue_items_ready_idx, locked SKIP LOCKED,
 * ranked within their partition, and a candidate is taken while its partition's live claims plus
 * its rank stay within its partition limit: the lower of `$7` and the item's own
 * `partition_limit` (ADR 0059). The partition's live claims are counted once per scanned row
 * that has a limit (the LATERAL: one probe of queue_items_running_idx), and a row whose partition
 * already runs its limit is skipped in the scan itself, so a saturated key never fills the scan
 * window and holds back the keys behind it. A throttled candidate counts its key's claims
 * within its window the same way (the second LATERAL: one probe of queue_items_throttled_idx),
 * is skipped in the scan when that count reached its `throttle_count`, and is taken while its
 * rank within its throttle key plus that count stays within it.
 */
function claimStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-claim'),
    text: `WITH running AS MATERIALIZED (
  SELECT r.partition_key FROM ${q}.queue_items AS r
  WHERE r.queue = $1::text AND r.status = 'running' AND r.claim_expires_at_ms > $3::bigint
),
budget AS (
  SELECT GREATEST(0, LEAST(
    $5::bigint,
    $6::bigint - (SELECT count(*) FROM running),
    $8::bigint - (SELECT count(*) FROM ${q}.queue_items AS w
                  WHERE w.queue = $1::text AND w.started_at_ms > $9::bigint)
  )) AS n
),
candidates AS MATERIALIZED (
  SELECT c.item_id, c.partition_key, c.priority, c.seq, p.max AS partition_max,
    p.running AS partition_running, c.throttle_key, c.throttle_count, t.started AS throttle_started
  FROM ${q}.queue_items AS c
  CROSS JOIN LATERAL (
    SELECT CASE WHEN c.partition_key IS NOT NULL
             THEN LEAST($7::bigint, c.partition_limit::bigint) END AS max,
      CASE WHEN c.partition_key IS NULL OR LEAST($7::bigint, c.partition_limit::bigint) IS NULL
        THEN 0
        ELSE (SELECT count(*) FROM ${q}.queue_items AS r
              WHERE r.queue = $1::text AND r.partition_key = c.partition_key
                AND r.status = 'running' AND r.claim_expires_at_ms > $3::bigint)
      END AS running
  ) AS p
  CROSS JOIN LATERAL (
    SELECT CASE WHEN c.throttle_key IS NULL THEN 0
      ELSE (SELECT count(*) FROM ${q}.queue_items AS s
            WHERE s.queue = $1::text AND s.throttle_key = c.throttle_key
              AND s.started_at_ms > $3::bigint - c.throttle_window_ms)
      END AS started
  ) AS t
  WHERE c.queue = $1::text AND c.status <> 'done'
    AND (c.status = 'pending' OR c.claim_expires_at_ms <= $3::bigint)
    AND (c.due_at_ms IS NULL OR c.due_at_ms <= $3::bigint)
    AND ($11::text[] IS NULL OR EXISTS (
      SELECT 1 FROM unnest($11::text[], $12::text[]) AS f(name, version)
      WHERE f.name = c.flow AND f.version IS NOT DISTINCT FROM c.version))
    AND (p.max IS NULL OR p.running < p.max)
    AND (c.throttle_key IS NULL OR t.started < c.throttle_count)
  ORDER BY c.priority DESC, c.seq
  LIMIT $10::int
  FOR UPDATE OF c SKIP LOCKED
),
ranked AS (
  SELECT c.item_id, c.partition_key, c.priority, c.seq, c.partition_max, c.partition_running,
    row_number() OVER (PARTITION BY c.partition_key ORDER BY c.priority DESC, c.seq) AS nth,
    c.throttle_key, c.throttle_count, c.throttle_started,
    row_number() OVER (PARTITION BY c.throttle_key ORDER BY c.priority DESC, c.seq) AS throttle_nth
  FROM candidates AS c
),
picked AS (
  SELECT k.item_id FROM ranked AS k
  WHERE (k.partition_max IS NULL OR k.nth + k.partition_running <= k.partition_max)
    AND (k.throttle_key IS NULL OR k.throttle_nth + k.throttle_started <= k.throttle_count)
  ORDER BY k.priority DESC, k.seq
  LIMIT (SELECT n FROM budget)
)
UPDATE ${q}.queue_items AS i
SET status = 'running', owner = $2::text, claim_expires_at_ms = $4::bigint,
    started_at_ms = $3::bigint, attempts = i.attempts + 1
FROM picked
WHERE i.queue = $1::text AND i.item_id = picked.item_id
RETURNING i.*`,
  };
}

/**
 * Extend the owner's live claims. The queue row FOR SHARE waits out a claim in progress (so a
 * claim never counts an expired item as free while a renew revives it); item rows are locked in
 * id order, so renews and completes racing over one batch never deadlock. `$1` queue, `$2` ids,
 * `$3` owner, `$4` new expiry, `$5` now. Serves: queues_pkey, queue_items_pkey.
 */
function renewStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-renew'),
    text: `WITH lock_row AS (
  SELECT 1 FROM ${q}.queues WHERE queue = $1::text FOR SHARE
),
mine AS (
  SELECT i.item_id FROM ${q}.queue_items AS i
  WHERE EXISTS (SELECT 1 FROM lock_row) AND i.queue = $1::text AND i.item_id = ANY($2::text[])
    AND i.status = 'running' AND i.owner = $3::text AND i.claim_expires_at_ms > $5::bigint
  ORDER BY i.item_id
  FOR UPDATE OF i
)
UPDATE ${q}.queue_items AS i SET claim_expires_at_ms = $4::bigint
FROM mine WHERE i.queue = $1::text AND i.item_id = mine.item_id
RETURNING i.item_id`,
  };
}

/** Mark items done, locking them in id order. `$1` queue, `$2` ids, `$3` now, `$4` outcome. */
function completeStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-complete'),
    text: `WITH mine AS (
  SELECT i.item_id FROM ${q}.queue_items AS i
  WHERE i.queue = $1::text AND i.item_id = ANY($2::text[]) AND i.status <> 'done'
  ORDER BY i.item_id
  FOR UPDATE OF i
)
UPDATE ${q}.queue_items AS i SET status = 'done', completed_at_ms = $3::bigint, outcome = $4::text
FROM mine WHERE i.queue = $1::text AND i.item_id = mine.item_id`,
  };
}

/** One item. Serves: queue_items_pkey. */
function getStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-get'),
    text: `SELECT * FROM ${q}.queue_items WHERE queue = $1::text AND item_id = $2::text`,
  };
}

/**
 * A partition's unfinished items in enqueue order (a cancel-mode singleton's lookup). `$1`
 * queue, `$2` partition key, `$3` limit. Serves: queue_items_running_idx for the running ones,
 * the queue's ready index for the pending ones.
 */
function unfinishedStatement(q: string, schema: string): PgStatement {
  return {
    name: statementName(schema, 'queue-unfinished-of-partition'),
    text: `SELECT * FROM ${q}.queue_items
WHERE queue = $1::text AND partition_key = $2::text AND status <> 'done'
ORDER BY seq LIMIT $3::int`,
  };
}

/**
 * Counts per queue in one pass over its items. `$1` queue (`= $1` for one queue, `> $1` for the
 * page after it), `$2` now, `$3` limit. Serves: queue_items_pkey (queue, item_id), whose order
 * groups the items by queue without a sort.
 */
function statsStatement(q: string, schema: string, page: boolean): PgStatement {
  return {
    name: statementName(schema, page ? 'queue-list' : 'queue-stats'),
    text: `SELECT i.queue,
  count(*) FILTER (WHERE i.status <> 'done'
                     AND NOT (i.status = 'running' AND i.claim_expires_at_ms > $2::bigint))::int AS depth,
  count(*) FILTER (WHERE i.status = 'running' AND i.claim_expires_at_ms > $2::bigint)::int AS claimed,
  count(*) FILTER (WHERE i.status = 'done' AND coalesce(i.outcome, 'completed') = 'completed')::int
    AS completed,
  count(*) FILTER (WHERE i.status = 'done' AND i.outcome = 'failed')::int AS failed,
  count(*) FILTER (WHERE i.status = 'done' AND i.outcome = 'cancelled')::int AS cancelled
FROM ${q}.queue_items AS i
WHERE i.queue ${page ? '>' : '='} $1::text
GROUP BY i.queue
ORDER BY i.queue
LIMIT $3::bigint`,
  };
}

/** Builds the queue statements of a (validated) schema. */
export function queueStatements(quotedSchema: string, schema: string): QueueStatements {
  return {
    enqueue: enqueueStatement(quotedSchema, schema),
    existing: existingStatement(quotedSchema, schema),
    idempotencyLock: idempotencyLockStatement(schema),
    idempotent: idempotentStatement(quotedSchema, schema),
    debounce: debounceStatement(quotedSchema, schema),
    lockQueue: lockQueueStatement(quotedSchema, schema),
    claim: claimStatement(quotedSchema, schema),
    renew: renewStatement(quotedSchema, schema),
    complete: completeStatement(quotedSchema, schema),
    get: getStatement(quotedSchema, schema),
    unfinished: unfinishedStatement(quotedSchema, schema),
    stats: statsStatement(quotedSchema, schema, false),
    list: statsStatement(quotedSchema, schema, true),
  };
}
