import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 4: the tables of `PostgresQueueStore`. Once shipped, never edit it: add `0005-…`
 * instead.
 *
 * `queues` holds one row per queue, written once by the first enqueue: a claim locks it
 * (`FOR UPDATE`) so claims of one queue serialize and their global counts (running, started in
 * the rate window) are exact across processes, while claims of different queues never wait on
 * each other. Items are picked `FOR UPDATE SKIP LOCKED`, so a claim never waits for a renew or
 * complete holding an item row.
 */
export const queuesMigration: PostgresMigration = {
  name: '0004-queues',
  version: 4,
  statements: (s) => [
    `CREATE TABLE ${s}.queues (
      -- Serves the claim's lock (queue = $1 FOR UPDATE) and renew's FOR SHARE.
      queue text COLLATE "C" PRIMARY KEY
    )`,

    // One row per item; finished items stay (status 'done'), so an item id is unique in its queue
    // forever and the rate window can count recent claims.
    `CREATE TABLE ${s}.queue_items (
      queue text COLLATE "C" NOT NULL,
      item_id text COLLATE "C" NOT NULL,
      -- Enqueue order: the tie-break after priority.
      seq bigint GENERATED ALWAYS AS IDENTITY,
      flow text NOT NULL,
      version text,
      -- The exact JSON text of the input (not jsonb, which normalises -0 and key order).
      input text NOT NULL,
      priority integer NOT NULL,
      dedupe_key text COLLATE "C",
      partition_key text COLLATE "C",
      status text NOT NULL CHECK (status IN ('pending', 'running', 'done')),
      owner text,
      -- Epoch milliseconds by the queue store's clock.
      claim_expires_at_ms bigint,
      started_at_ms bigint,
      attempts integer NOT NULL DEFAULT 0,
      enqueued_at_ms bigint NOT NULL,
      completed_at_ms bigint,
      -- Serves get, renew and complete (queue = $1 AND item_id = ANY($2)) and refuses a second
      -- item id (enqueue's ON CONFLICT DO NOTHING).
      CONSTRAINT queue_items_pkey PRIMARY KEY (queue, item_id)
    )`,

    // Refuses a second unfinished item with one dedupe key (enqueue's ON CONFLICT DO NOTHING) and
    // serves enqueue's duplicate lookup.
    `CREATE UNIQUE INDEX queue_items_dedupe_idx ON ${s}.queue_items (queue, dedupe_key)
      WHERE dedupe_key IS NOT NULL AND status <> 'done'`,

    // Serves claim's candidate scan: unfinished items best first (priority desc, seq), stopping
    // after the scan bound with no sort.
    `CREATE INDEX queue_items_ready_idx ON ${s}.queue_items (queue, priority DESC, seq)
      WHERE status <> 'done'`,

    // Serves claim's running counts, global and per partition.
    `CREATE INDEX queue_items_running_idx ON ${s}.queue_items (queue, partition_key)
      WHERE status = 'running'`,

    // Serves claim's rate window: claims started after now - windowMs.
    `CREATE INDEX queue_items_started_idx ON ${s}.queue_items (queue, started_at_ms)
      WHERE started_at_ms IS NOT NULL`,
  ],
};
