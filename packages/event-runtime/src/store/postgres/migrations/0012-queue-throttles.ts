import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 12: an item's own per-key throttle (ADR 0059), written at enqueue: the claim takes a
 * throttled item only while its key was claimed fewer than `throttle_count` times within the last
 * `throttle_window_ms`. Rows written before keep NULL: no throttle, as before. The three columns
 * are set together or not at all. Once shipped, never edit it: add `0013-…` instead.
 */
export const queueThrottlesMigration: PostgresMigration = {
  name: '0012-queue-throttles',
  version: 12,
  statements: (s) => [
    `ALTER TABLE ${s}.queue_items
      ADD COLUMN throttle_key text,
      ADD COLUMN throttle_count integer CHECK (throttle_count > 0),
      ADD COLUMN throttle_window_ms bigint CHECK (throttle_window_ms > 0),
      ADD CONSTRAINT queue_items_throttle_whole CHECK (
        (throttle_key IS NULL) = (throttle_count IS NULL)
        AND (throttle_key IS NULL) = (throttle_window_ms IS NULL))`,
    // Serves the claim's count of a throttle key's claims within its window
    // (throttle_key = $k AND started_at_ms > now - window).
    `CREATE INDEX queue_items_throttled_idx
      ON ${s}.queue_items (queue, throttle_key, started_at_ms) WHERE throttle_key IS NOT NULL`,
  ],
};
