import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 3: execution inboxes (`sendSignal`, `readSignals`). Once shipped, never edit it: add
 * `0004-…` instead.
 *
 * No index for `claimDue`: its candidate scan (`status = 'suspended' AND wake_at_ms <= $now
 * ORDER BY wake_at_ms LIMIT $n`) is served by migration 1's `executions_status_wake_idx`
 * `(status, wake_at_ms) WHERE wake_at_ms IS NOT NULL`. `wake_at_ms <= $now` is strict, so it
 * implies the index predicate even in the generic plan of the prepared statement; the equality on
 * `status` leaves the entries in `wake_at_ms` order, so the scan stops after `$n` rows with no
 * sort (postgres-event-store-signals.test.ts checks the plan). A second index on `(wake_at_ms)
 * WHERE status = 'suspended'` would only add write cost to every status change.
 */
export const signalsMigration: PostgresMigration = {
  name: '0003-signals',
  version: 3,
  statements: (s) => [
    // One row per signal: an execution's inbox in arrival order (signal_id 1, 2, 3, … per
    // execution). Rows are never updated.
    `CREATE TABLE ${s}.signals (
      execution_id text COLLATE "C" NOT NULL,
      signal_id bigint NOT NULL CHECK (signal_id >= 1),
      name text NOT NULL,
      -- The exact JSON text of the payload (not jsonb, which normalises -0 and key order).
      payload text NOT NULL,
      idempotency_key text,
      -- Epoch milliseconds by the sending store's clock.
      at bigint NOT NULL,
      -- Serves readSignals (execution_id = $1 AND signal_id > $2 ORDER BY signal_id), sendSignal's
      -- next id (max(signal_id) WHERE execution_id = $1, one backward probe), and is the arbiter
      -- that makes one of two senders racing for the same next id lose (see
      -- send-signal-statement.ts).
      CONSTRAINT signals_pkey PRIMARY KEY (execution_id, signal_id)
    )`,

    // Serves sendSignal's duplicate lookup (execution_id = $1 AND idempotency_key = $4), and
    // refuses a second signal with the same key for an execution even when two senders race.
    `CREATE UNIQUE INDEX signals_idempotency_key_idx
      ON ${s}.signals (execution_id, idempotency_key)
      WHERE idempotency_key IS NOT NULL`,
  ],
};
