import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 2: the tables of `PostgresLeaseStore` and `PostgresSnapshotStore`. Once shipped,
 * never edit it: add `0003-…` instead.
 *
 * Execution ids are `COLLATE "C"`, as in migration 1: the lease statements lock rows in id order
 * to stay deadlock-free, and byte order is the same on every server whatever its locale.
 */
export const leasesAndSnapshotsMigration: PostgresMigration = {
  name: '0002-leases-and-snapshots',
  version: 2,
  statements: (s) => [
    // One row per leased execution; a released lease is deleted.
    `CREATE TABLE ${s}.leases (
      -- The primary key is the table's only index. It serves every lease statement: acquire's
      -- ON CONFLICT (execution_id), renew's and release's join of the batch's ids
      -- (execution_id = ids.id, then locked in execution_id order) and get's
      -- WHERE execution_id = $1.
      execution_id text COLLATE "C" PRIMARY KEY,
      owner text NOT NULL,
      -- Epoch milliseconds by the lease store's clock; expired once expires_at_ms <= now.
      expires_at_ms bigint NOT NULL
    )`,

    // The newest snapshot per execution.
    `CREATE TABLE ${s}.snapshots (
      -- The primary key is the table's only index. It serves load's WHERE execution_id = $1 and
      -- save's ON CONFLICT (execution_id).
      execution_id text COLLATE "C" PRIMARY KEY,
      sequence bigint NOT NULL CHECK (sequence >= 0),
      -- The exact JSON text of the state. Not jsonb, which normalises (-0, key order,
      -- duplicate keys): a loaded state must be the one saved.
      state text NOT NULL,
      -- Epoch milliseconds when the snapshot was taken.
      at bigint NOT NULL
    )`,
  ],
};
