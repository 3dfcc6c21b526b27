import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 13, debounce by key (ADR 0059). An item is not claimed before `due_at_ms`; a
 * debounced enqueue of a key whose item is still pending replaces its input and pushes
 * `due_at_ms`, never past `debounce_deadline_ms` (first enqueue + maxWaitMs, NULL for no cap).
 * Rows written before keep NULL: due at once, as before. Once shipped, never edit it: add
 * `0014-…` instead.
 */
export const queueDebounceMigration: PostgresMigration = {
  name: '0013-queue-debounce',
  version: 13,
  statements: (s) => [
    `ALTER TABLE ${s}.queue_items
      ADD COLUMN debounce_key text COLLATE "C",
      ADD COLUMN due_at_ms bigint,
      ADD COLUMN debounce_deadline_ms bigint,
      ADD CONSTRAINT queue_items_debounce_whole CHECK (
        (debounce_key IS NULL) = (due_at_ms IS NULL)
        AND (debounce_key IS NOT NULL OR debounce_deadline_ms IS NULL))`,
    // Serves enqueue's update of the key's pending item (debounce_key = $k AND status =
    // 'pending'), and makes a second pending item of a key impossible.
    `CREATE UNIQUE INDEX queue_items_debounce_idx
      ON ${s}.queue_items (queue, debounce_key)
      WHERE debounce_key IS NOT NULL AND status = 'pending'`,
  ],
};
