/**
 * SQLite schema migrations: numbered, append-only, never edited once shipped. The version
 * applied is kept in `PRAGMA user_version`. Every index names the query it serves.
 */
export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

export const sqliteMigrations: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'event-log',
    sql: `
      -- position is the rowid: SQLite has one writer at a time, so rowid order is commit order,
      -- and readAll / subscribe page on it (WHERE position > ? ORDER BY position).
      CREATE TABLE loom_events (
        position     INTEGER PRIMARY KEY,
        execution_id TEXT    NOT NULL,
        sequence     INTEGER NOT NULL,
        type         TEXT    NOT NULL,
        payload      TEXT    NOT NULL,
        at           INTEGER NOT NULL,
        prev_hash    TEXT,
        hash         TEXT    NOT NULL
      );
      -- Serves read(executionId, fromSequence), the tail lookup in append, and refuses a
      -- duplicate (execution_id, sequence) even if a writer skipped the tail check.
      CREATE UNIQUE INDEX loom_events_execution_sequence ON loom_events (execution_id, sequence);
      CREATE TABLE loom_fences (
        execution_id TEXT    PRIMARY KEY,
        epoch        INTEGER NOT NULL
      ) WITHOUT ROWID;
      -- The execution index: written only by appends that change an execution's status.
      CREATE TABLE loom_executions (
        execution_id  TEXT    PRIMARY KEY,
        status        TEXT    NOT NULL,
        wake_at_ms    INTEGER,
        updated_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
      -- Serves findExecutions(status, afterExecutionId): recovery's scan of running executions.
      CREATE INDEX loom_executions_status ON loom_executions (status, execution_id);
      -- Serves the timer query: suspended executions due at or before now.
      CREATE INDEX loom_executions_due ON loom_executions (wake_at_ms) WHERE status = 'suspended';
    `,
  },
  {
    version: 2,
    name: 'leases-and-snapshots',
    sql: `
      -- One row per leased execution; a released lease is deleted. The primary key is the only
      -- index: it serves every lease statement (acquire's ON CONFLICT (execution_id), renew's and
      -- release's WHERE execution_id IN (ids of the batch), get's WHERE execution_id = ?).
      -- WITHOUT ROWID: rows are small and always found by that key, so the table is the index.
      CREATE TABLE loom_leases (
        execution_id  TEXT    PRIMARY KEY,
        owner         TEXT    NOT NULL,
        expires_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
      -- The newest snapshot per execution; state is the exact JSON text of the snapshot (-0 kept).
      -- The primary key's index serves load's WHERE execution_id = ? and save's
      -- ON CONFLICT (execution_id). A rowid table, not WITHOUT ROWID: states run to megabytes,
      -- and a WITHOUT ROWID table wants rows far smaller than a page.
      CREATE TABLE loom_snapshots (
        execution_id TEXT    PRIMARY KEY,
        sequence     INTEGER NOT NULL,
        state        TEXT    NOT NULL,
        at           INTEGER NOT NULL
      );
    `,
  },
  {
    version: 3,
    name: 'signals',
    sql: `
      -- An execution's inbox: signals in arrival order (signal_id 1, 2, 3, … per execution).
      -- The primary key serves readSignals(executionId, afterSignalId) and the next-id lookup.
      CREATE TABLE loom_signals (
        execution_id    TEXT    NOT NULL,
        signal_id       INTEGER NOT NULL,
        name            TEXT    NOT NULL,
        payload         TEXT    NOT NULL,
        idempotency_key TEXT,
        at              INTEGER NOT NULL,
        PRIMARY KEY (execution_id, signal_id)
      ) WITHOUT ROWID;
      -- Serves sendSignal's duplicate check: one signal per idempotency key per execution.
      CREATE UNIQUE INDEX loom_signals_key ON loom_signals (execution_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    version: 4,
    name: 'queues',
    sql: `
      -- One row per queue item; finished items stay (status 'done'), so an item id is unique in
      -- its queue forever and the rate window can count recent claims. seq is the rowid: enqueue
      -- order, the tie-break after priority. Claims run in one IMMEDIATE transaction, so SQLite's
      -- single writer makes the global counts exact without a lock row per queue.
      CREATE TABLE loom_queue_items (
        seq                 INTEGER PRIMARY KEY,
        queue               TEXT    NOT NULL,
        item_id             TEXT    NOT NULL,
        flow                TEXT    NOT NULL,
        version             TEXT,
        input               TEXT    NOT NULL,
        priority            INTEGER NOT NULL,
        dedupe_key          TEXT,
        partition_key       TEXT,
        status              TEXT    NOT NULL,
        owner               TEXT,
        claim_expires_at_ms INTEGER,
        started_at_ms       INTEGER,
        attempts            INTEGER NOT NULL DEFAULT 0,
        enqueued_at_ms      INTEGER NOT NULL,
        completed_at_ms     INTEGER
      );
      -- Serves get, renew and complete (queue = ? AND item_id = ?) and refuses a second item id.
      CREATE UNIQUE INDEX loom_queue_items_id ON loom_queue_items (queue, item_id);
      -- Refuses a second unfinished item with one dedupe key; serves enqueue's duplicate lookup.
      CREATE UNIQUE INDEX loom_queue_items_dedupe ON loom_queue_items (queue, dedupe_key)
        WHERE dedupe_key IS NOT NULL AND status <> 'done';
      -- Serves claim's candidate scan: unfinished items best first (priority desc, seq).
      CREATE INDEX loom_queue_items_ready ON loom_queue_items (queue, priority DESC, seq)
        WHERE status <> 'done';
      -- Serves claim's running counts, global and per partition.
      CREATE INDEX loom_queue_items_running ON loom_queue_items (queue, partition_key)
        WHERE status = 'running';
      -- Serves claim's rate window: claims started after now - windowMs.
      CREATE INDEX loom_queue_items_started ON loom_queue_items (queue, started_at_ms)
        WHERE started_at_ms IS NOT NULL;
    `,
  },
  {
    version: 5,
    name: 'execution-index-details',
    sql: `
      -- What findExecutions filters on besides the status, written by the same upsert as the
      -- status (no extra statement per append): the flow and version from execution.started,
      -- when the execution started, and how a settled one ended.
      ALTER TABLE loom_executions ADD COLUMN flow TEXT;
      ALTER TABLE loom_executions ADD COLUMN version TEXT;
      ALTER TABLE loom_executions ADD COLUMN settled_as TEXT;
      ALTER TABLE loom_executions ADD COLUMN created_at_ms INTEGER;
      -- Backfill from the log, so an upgraded database answers like a new one: sequence 0 gives
      -- the creation time and, when it is an execution.started, the flow and version.
      UPDATE loom_executions SET
        created_at_ms = coalesce(
          (SELECT e.at FROM loom_events e
           WHERE e.execution_id = loom_executions.execution_id AND e.sequence = 0),
          updated_at_ms),
        flow = (SELECT CASE WHEN json_valid(e.payload) AND json_type(e.payload, '$.flow') = 'text'
                            THEN json_extract(e.payload, '$.flow') END
                FROM loom_events e
                WHERE e.execution_id = loom_executions.execution_id AND e.sequence = 0
                  AND e.type = 'execution.started'),
        version = (SELECT CASE WHEN json_valid(e.payload)
                                 AND json_type(e.payload, '$.version') = 'text'
                               THEN json_extract(e.payload, '$.version') END
                   FROM loom_events e
                   WHERE e.execution_id = loom_executions.execution_id AND e.sequence = 0
                     AND e.type = 'execution.started');
      -- A settled execution ended as its newest terminal event says.
      UPDATE loom_executions SET settled_as = (
        SELECT CASE e.type
                 WHEN 'execution.completed' THEN 'completed'
                 WHEN 'execution.failed' THEN 'failed'
                 WHEN 'execution.cancelled' THEN 'cancelled'
                 WHEN 'execution.continued_as_new' THEN 'continued'
               END
        FROM loom_events e
        WHERE e.execution_id = loom_executions.execution_id
          AND e.type IN ('execution.completed', 'execution.failed', 'execution.cancelled',
                         'execution.continued_as_new')
        ORDER BY e.sequence DESC LIMIT 1)
      WHERE status = 'settled';
      -- Serves findExecutions({ flow, … }): a flow's executions in id order (the cursor), the
      -- other filters checked on each row.
      CREATE INDEX loom_executions_flow ON loom_executions (flow, execution_id);
      -- Serves findExecutions({ status: 'completed' | 'failed' | 'cancelled' | 'continued' })
      -- without a flow: one way of ending in id order, not every settled execution.
      CREATE INDEX loom_executions_settled_as ON loom_executions (settled_as, execution_id)
        WHERE settled_as IS NOT NULL;
    `,
  },
  {
    version: 6,
    name: 'queue-outcomes',
    sql: `
      -- How a finished item ended, as complete() was told: completed, failed or cancelled.
      ALTER TABLE loom_queue_items ADD COLUMN outcome TEXT;
      -- Backfill: an item the workflow layer ran as execution queue:<queue>:<item_id> ended as
      -- that execution did (failed or cancelled); any other finished item completed.
      UPDATE loom_queue_items SET outcome = coalesce(
        (SELECT CASE x.settled_as WHEN 'failed' THEN 'failed' WHEN 'cancelled' THEN 'cancelled' END
         FROM loom_executions x
         WHERE x.execution_id = 'queue:' || loom_queue_items.queue || ':' || loom_queue_items.item_id),
        'completed')
      WHERE status = 'done';
      -- No new index: queueStats and listQueues read a queue's items through
      -- loom_queue_items_id (queue, item_id), grouped by queue in index order.
    `,
  },
  {
    version: 7,
    name: 'started-by',
    sql: `
      -- The node that started an execution without leasing it yet (a lazy start), from the node
      -- of its execution.started, written by the same upsert as the status and kept by later
      -- ones: recovery takes a dead starter's unleased executions at once.
      ALTER TABLE loom_executions ADD COLUMN started_by TEXT;
      -- Backfill from the log; older logs have no node and keep null (recovered as before).
      UPDATE loom_executions SET started_by = (
        SELECT CASE WHEN json_valid(e.payload) AND json_type(e.payload, '$.node') = 'text'
                    THEN json_extract(e.payload, '$.node') END
        FROM loom_events e
        WHERE e.execution_id = loom_executions.execution_id AND e.sequence = 0
          AND e.type = 'execution.started');
      -- No index: recovery reads it on the rows it already pages through.
    `,
  },
  {
    version: 8,
    name: 'live-chunks',
    sql: `
      -- The live channel (ADR 0050): text an execution streams while it works, never part of the
      -- log, deleted once what it became is in the log (or by prune). AUTOINCREMENT: a position
      -- is never reused after deletes, so a follower's afterPosition never skips a new chunk.
      CREATE TABLE loom_live_chunks (
        position     INTEGER PRIMARY KEY AUTOINCREMENT,
        execution_id TEXT    NOT NULL,
        stream       TEXT    NOT NULL,
        attempt      TEXT    NOT NULL,
        text_offset  INTEGER NOT NULL,
        text         TEXT    NOT NULL,
        at_ms        INTEGER NOT NULL
      );
      -- Serves write's INSERT … ON CONFLICT DO NOTHING: one chunk per (stream, attempt, offset).
      CREATE UNIQUE INDEX loom_live_chunks_key
        ON loom_live_chunks (execution_id, stream, attempt, text_offset);
      -- Serves read (WHERE execution_id = ? AND stream = ? AND position > ? ORDER BY position)
      -- and drop.
      CREATE INDEX loom_live_chunks_stream ON loom_live_chunks (execution_id, stream, position);
      -- Serves prune (WHERE at_ms < ?).
      CREATE INDEX loom_live_chunks_at ON loom_live_chunks (at_ms);
    `,
  },
  {
    version: 9,
    name: 'runs-page-order',
    sql: `
      -- The operator's runs page (@loom/view searchRuns, the dashboard): newest first, paged by
      -- keyset (WHERE (updated_at_ms, execution_id) < (?, ?) ORDER BY updated_at_ms DESC,
      -- execution_id DESC LIMIT ?), so the first and every next page read only their rows.
      -- Serves the page without a status, and its counts (a covering scan by status).
      CREATE INDEX loom_executions_updated ON loom_executions (updated_at_ms, execution_id);
      -- Serves the page of running, suspended or settled runs (status = ?).
      CREATE INDEX loom_executions_status_updated
        ON loom_executions (status, updated_at_ms, execution_id);
      -- Serves the page of one way of ending (settled_as = ?: completed, failed, …).
      CREATE INDEX loom_executions_settled_as_updated
        ON loom_executions (settled_as, updated_at_ms, execution_id) WHERE settled_as IS NOT NULL;
      -- Serves the page sorted by creation (ORDER BY created_at_ms, execution_id).
      CREATE INDEX loom_executions_created ON loom_executions (created_at_ms, execution_id);
    `,
  },
  {
    version: 10,
    name: 'queue-partition-limits',
    sql: `
      -- An item's own limit on its partition's live claims (per-key concurrency, ADR 0059),
      -- written at enqueue and read by claim beside the claim's partitionConcurrencyMax. Older
      -- rows keep NULL: no limit of their own, as before.
      ALTER TABLE loom_queue_items ADD COLUMN partition_limit INTEGER;
      -- No new index: claim counts a candidate's partition's live claims through
      -- loom_queue_items_running (queue, partition_key) WHERE status = 'running'.
    `,
  },
  {
    version: 11,
    name: 'queue-flow-control',
    sql: `
      -- Flow control by key (ADR 0059). An item's own per-key throttle: claimed only while its key was claimed fewer
      -- than throttle_count times within the last throttle_window_ms. Older rows keep NULL: none.
      ALTER TABLE loom_queue_items ADD COLUMN throttle_key TEXT;
      ALTER TABLE loom_queue_items ADD COLUMN throttle_count INTEGER;
      ALTER TABLE loom_queue_items ADD COLUMN throttle_window_ms INTEGER;
      -- Serves claim's count of a throttle key's claims within its window
      -- (throttle_key = ? AND started_at_ms > now - window).
      CREATE INDEX loom_queue_items_throttled
        ON loom_queue_items (queue, throttle_key, started_at_ms) WHERE throttle_key IS NOT NULL;
      -- An item's dedupe window for starts: an enqueue with the same idempotency_key before
      -- idempotency_until_ms answers this item. Older rows keep NULL: none.
      ALTER TABLE loom_queue_items ADD COLUMN idempotency_key TEXT;
      ALTER TABLE loom_queue_items ADD COLUMN idempotency_until_ms INTEGER;
      -- Serves enqueue's lookup of an open window (idempotency_key = ? AND until > now).
      CREATE INDEX loom_queue_items_idempotency
        ON loom_queue_items (queue, idempotency_key, idempotency_until_ms)
        WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    version: 12,
    name: 'queue-debounce',
    sql: `
      -- Debounce by key (ADR 0059): an item is not claimed before due_at_ms; a debounced enqueue
      -- of a key whose item is still pending replaces its input and pushes due_at_ms, never past
      -- debounce_deadline_ms (first enqueue + maxWaitMs, NULL for no cap). Older rows keep NULL:
      -- due at once, as before.
      ALTER TABLE loom_queue_items ADD COLUMN debounce_key TEXT;
      ALTER TABLE loom_queue_items ADD COLUMN due_at_ms INTEGER;
      ALTER TABLE loom_queue_items ADD COLUMN debounce_deadline_ms INTEGER;
      -- Serves enqueue's lookup of the key's pending item (debounce_key = ? AND status =
      -- 'pending'), and makes a second pending item of a key impossible.
      CREATE UNIQUE INDEX loom_queue_items_debounce
        ON loom_queue_items (queue, debounce_key)
        WHERE debounce_key IS NOT NULL AND status = 'pending';
    `,
  },
  {
    version: 13,
    name: 'waiting-for',
    sql: `
      -- What a suspended execution waits for (ADR 0062), written by the append that suspends it:
      -- bits of timer 1, signal 2, approval 4, question 8, child 16. NULL when the writer did not
      -- say (every row written before this migration): a view then falls back to wake_at_ms
      -- (a timer when set, some input when not). Nothing to backfill: the log is not read.
      ALTER TABLE loom_executions ADD COLUMN waiting_for INTEGER;
      -- No index of its own: the runs page filtered by what a run waits for (@loom/view
      -- searchRuns, status = 'suspended' AND waiting_for & bit <> 0, newest change first) walks
      -- loom_executions_status_updated (status, updated_at_ms, execution_id) from migration 9, and
      -- its counts loom_executions_status. Measured over 100,000 runs, 5,000 suspended (ADR 0062):
      -- a partial index (updated_at_ms, execution_id, waiting_for, wake_at_ms) WHERE status =
      -- 'suspended' was never chosen by the planner (analyzed or not), and forced with INDEXED BY
      -- it was no faster (page 0.53 vs 0.43 ms, counts 13 vs 10 ms): it would only cost writes.
    `,
  },
  {
    version: 14,
    name: 'claimed-by',
    sql: `
      -- The node whose claimDue flipped a suspended execution to running (ADR 0063), cleared by
      -- the row's next status change (an append's upsert, unclaimDue): recovery treats a claimed
      -- execution nobody leased as the claimer's, so a claim whose answer was lost is taken at
      -- once by the claimer, or by anyone once it is dead. NULL on older rows: recovered as before.
      ALTER TABLE loom_executions ADD COLUMN claimed_by TEXT;
      -- No index: recovery reads it on the running rows it already pages through.
    `,
  },
];

/** The newest schema version this code knows. */
export const sqliteSchemaVersion = sqliteMigrations[sqliteMigrations.length - 1]?.version ?? 0;
