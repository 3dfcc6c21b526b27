import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 11: an item's own limit on its partition's live claims (per-key concurrency, ADR
 * 0059), written at enqueue and read by the claim beside the claim's `partitionConcurrencyMax`
 * (the lower of the two holds). Rows written before keep NULL: no limit of their own, as before.
 * Once shipped, never edit it: add `0012-…` instead.
 *
 * No new index: the claim counts a candidate's partition's live claims through
 * queue_items_running_idx `(queue, partition_key) WHERE status = 'running'`.
 */
export const queuePartitionLimitsMigration: PostgresMigration = {
  name: '0011-queue-partition-limits',
  version: 11,
  statements: (s) => [
    `ALTER TABLE ${s}.queue_items
      ADD COLUMN partition_limit integer CHECK (partition_limit > 0)`,
  ],
};
