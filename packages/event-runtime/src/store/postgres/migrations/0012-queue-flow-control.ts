import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 12, flow control by key (ADR 0059). An item's own per-key throttle, written at
 * enqueue: the claim takes a throttled item only while its key was claimed fewer than
 * `throttle_count` times within the last `throttle_window_ms` (the three columns set together or
 * not at all). An item's dedupe window: an enqueue with the same `idempotency_key` before
 * `idempotency_until_ms` answers it. Rows written before keep NULL: neither, as before. Once
 * shipped, never edit it: add `0013-…` instead.
 */
export const queueFlowControlMigration: PostgresMigration = {
  name: '0012-queue-flow-control',
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
    `ALTER TABLE ${s}.queue_items
      ADD COLUMN idempotency_key text COLLATE "C",
      ADD COLUMN idempotency_until_ms bigint,
      ADD CONSTRAINT queue_items_idempotency_whole CHECK (
        (idempotency_key IS NULL) = (idempotency_until_ms IS NULL))`,
    // Serves enqueue's lookup of an open window (idempotency_key = $k AND until > now).
    `CREATE INDEX queue_items_idempotency_idx
      ON ${s}.queue_items (queue, idempotency_key, idempotency_until_ms)
      WHERE idempotency_key IS NOT NULL`,
  ],
};
