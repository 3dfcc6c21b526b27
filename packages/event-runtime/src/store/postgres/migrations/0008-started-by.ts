import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 8: the node that started each execution without leasing it yet (a lazy start), on
 * its index row, so recovery can tell whose unleased executions those are and take a dead
 * starter's at once instead of waiting `recoverQuietMs`. Once shipped, never edit it: add
 * `0009-…` instead.
 *
 * Written by the append's existing index upsert (no extra statement or round trip), from the
 * `node` of `execution.started` at sequence 0, and kept by later status changes. Existing rows
 * are backfilled from their `execution.started` in the same transaction (one probe of
 * events_pkey per row); older logs have no `node`, so they keep null and recovery treats them as
 * before. No index: recovery reads it on the rows it already pages through.
 */
export const startedByMigration: PostgresMigration = {
  name: '0008-started-by',
  version: 8,
  statements: (s) => [
    `ALTER TABLE ${s}.executions ADD COLUMN started_by text COLLATE "C"`,
    `UPDATE ${s}.executions x SET started_by = e.payload::jsonb ->> 'node'
    FROM ${s}.events e
    WHERE e.execution_id = x.execution_id AND e.sequence = 0
      AND e.type = 'execution.started'
      AND jsonb_typeof(e.payload::jsonb -> 'node') = 'string'`,
  ],
};
