import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 7: the id of the newest signal in each execution's inbox, on its index row, so a
 * suspension can tell in the write that makes it whether a signal came that its writer has not
 * seen (`AppendGuard.wakeOnSignalsAfter`, ADR 0033). Once shipped, never edit it: add `0008-…`
 * instead.
 *
 * Why on the row and not a look at the inbox: under READ COMMITTED the append statement reads
 * the signals table through the snapshot it took when it started, so a signal committed after
 * that but before the upsert reached the row would be missed. `sendSignal` updates this column
 * while it holds the row lock, and the upsert's `DO UPDATE` reads the row's latest committed
 * version (it waits for that lock), so one of the two always sees the other.
 *
 * No index: it is read and written through executions_pkey only. Existing rows are backfilled
 * from their inboxes in the same transaction (one probe of signals_pkey per inbox).
 */
export const signalMarkMigration: PostgresMigration = {
  name: '0007-signal-mark',
  version: 7,
  statements: (s) => [
    `ALTER TABLE ${s}.executions ADD COLUMN last_signal_id bigint NOT NULL DEFAULT 0`,
    `UPDATE ${s}.executions x SET last_signal_id = g.newest
    FROM (SELECT execution_id, max(signal_id) AS newest FROM ${s}.signals GROUP BY execution_id) g
    WHERE g.execution_id = x.execution_id`,
  ],
};
