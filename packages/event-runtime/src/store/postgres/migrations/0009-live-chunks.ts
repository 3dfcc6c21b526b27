import type { PostgresMigration } from './postgres-migration.js';

/**
 * Migration 9: the live channel (ADR 0050), text an execution streams while it works (a model's
 * answer), readable by every process and never part of the log. Once shipped, never edit it: add
 * `0010-…` instead.
 *
 * UNLOGGED: the rows write no WAL, so a chunk's commit does not wait for a WAL flush, and a crash
 * of the server empties the table (followers then complete the text from the log's recorded
 * answer). Standbys do not have it either: after a failover a follower sees the text from the
 * next chunk on. An engine that ignores UNLOGGED (CockroachDB) keeps it logged: slower, correct.
 */
export const liveChunksMigration: PostgresMigration = {
  name: '0009-live-chunks',
  version: 9,
  statements: (s) => [
    `CREATE UNLOGGED TABLE ${s}.live_chunks (
      position     bigserial PRIMARY KEY,
      execution_id text COLLATE "C" NOT NULL,
      stream       text COLLATE "C" NOT NULL,
      attempt      text COLLATE "C" NOT NULL,
      text_offset  bigint NOT NULL,
      text         text NOT NULL,
      at_ms        bigint NOT NULL
    )`,
    // Serves write's INSERT … ON CONFLICT DO NOTHING: one chunk per (stream, attempt, offset).
    `CREATE UNIQUE INDEX live_chunks_key ON ${s}.live_chunks (execution_id, stream, attempt, text_offset)`,
    // Serves read (execution_id = $1 AND stream = $2 AND position > $3 ORDER BY position) and drop.
    `CREATE INDEX live_chunks_stream ON ${s}.live_chunks (execution_id, stream, position)`,
    // Serves prune (at_ms < $1).
    `CREATE INDEX live_chunks_at ON ${s}.live_chunks (at_ms)`,
  ],
};
