import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 6: how a finished queue item ended (`complete(queue, ids, outcome)`), for the failed
 * and cancelled counts of `queueStats` / `listQueues`. Once shipped, never edit it: add `0007-…`
 * instead.
 *
 * No new index: the stats read a queue's items through queue_items_pkey `(queue, item_id)`
 * (`queue = $1`, or `queue > $1` grouped in index order for a page of queues), one query.
 */
export const queueOutcomesMigration: PostgresMigration = {
  name: '0006-queue-outcomes',
  version: 6,
  statements: (s) => [
    `ALTER TABLE ${s}.queue_items
      ADD COLUMN outcome text CHECK (outcome IN ('completed', 'failed', 'cancelled'))`,

    // Backfill: an item the workflow layer ran as execution queue:<queue>:<item_id> ended as that
    // execution did (failed or cancelled, from the execution index of migration 5); any other
    // finished item completed.
    `UPDATE ${s}.queue_items q SET outcome = coalesce(
      (SELECT CASE x.settled_as WHEN 'failed' THEN 'failed' WHEN 'cancelled' THEN 'cancelled' END
       FROM ${s}.executions x
       WHERE x.execution_id = 'queue:' || q.queue || ':' || q.item_id),
      'completed')
    WHERE q.status = 'done'`,
  ],
};
