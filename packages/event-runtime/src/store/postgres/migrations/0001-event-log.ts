import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 1: the event log, fences, the execution index and the schema version row. Once
 * shipped, never edit it: add `0002-…` instead.
 *
 * Execution ids are `COLLATE "C"` everywhere: byte order is the same on every server whatever
 * its locale (findExecutions pages by id), and comparing bytes is cheaper than a locale.
 */
export const eventLogMigration: PostgresMigration = {
  name: '0001-event-log',
  version: 1,
  statements: (s) => [
    `CREATE TABLE ${s}.loom_schema_version (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      version integer NOT NULL
    )`,

    `CREATE TABLE ${s}.events (
      execution_id text COLLATE "C" NOT NULL,
      sequence bigint NOT NULL CHECK (sequence >= 0),
      type text NOT NULL,
      -- The exact JSON text that was hashed. Not jsonb: jsonb normalises (-0, key order,
      -- duplicate keys, spacing) and the hash chain and round-trip rules need the text as written.
      payload text NOT NULL,
      -- Epoch milliseconds, as the envelope carries it.
      at bigint NOT NULL,
      -- Unique, but NOT commit-ordered: sessions draw from the identity concurrently.
      position bigint GENERATED ALWAYS AS IDENTITY,
      -- The writing transaction; readAll orders by (tx_id, position) below the snapshot xmin.
      tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
      prev_hash text,
      hash text NOT NULL,
      -- Serves read() (execution_id = $1 AND sequence >= $2 ORDER BY sequence), append's
      -- prev-hash lookup and max(sequence); a second writer of a sequence loses on it (23505).
      CONSTRAINT events_pkey PRIMARY KEY (execution_id, sequence),
      -- Serves readAll's cursor lookup: the tx_id of the row at afterPosition.
      CONSTRAINT events_position_key UNIQUE (position)
    )`,

    // Serves readAll: WHERE (tx_id, position) > ($cursor) AND tx_id < xmin ORDER BY tx_id, position.
    `CREATE INDEX events_tx_id_position_idx ON ${s}.events (tx_id, position)`,

    `CREATE TABLE ${s}.fences (
      -- Serves fences.current/advance and append's fence check (execution_id = $1).
      execution_id text COLLATE "C" PRIMARY KEY,
      epoch bigint NOT NULL CHECK (epoch >= 0)
    )`,

    // The execution index: written only by appends whose guard carries a status.
    `CREATE TABLE ${s}.executions (
      -- Serves append's ON CONFLICT (execution_id) upsert.
      execution_id text COLLATE "C" PRIMARY KEY,
      status text NOT NULL CHECK (status IN ('running', 'suspended', 'settled')),
      wake_at_ms bigint,
      updated_at_ms bigint NOT NULL
    )`,

    // Serves findExecutions: WHERE status = $1 AND execution_id > $2 ORDER BY execution_id.
    `CREATE INDEX executions_status_id_idx ON ${s}.executions (status, execution_id)`,

    // Serves findExecutions with dueAtOrBeforeMs (the timer poller): WHERE status = $1 AND
    // wake_at_ms <= $3; only suspended executions with a timer have a wake_at_ms.
    `CREATE INDEX executions_status_wake_idx ON ${s}.executions (status, wake_at_ms)
      WHERE wake_at_ms IS NOT NULL`,
  ],
};
