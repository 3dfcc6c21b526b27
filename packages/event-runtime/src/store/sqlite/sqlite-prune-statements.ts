import type Database from 'better-sqlite3';

/**
 * `prune`'s choice: settled executions whose status last changed before `@endedBeforeMs`
 * (optionally only the ids of the JSON array `@ids`), in id order, with each log's event count
 * and last hash. Serves: loom_executions_status (status, execution_id), the settled time checked
 * on each row; the last event through loom_events_execution_sequence.
 *
 * The execution holding the newest event is never chosen: positions are rowids, and SQLite hands
 * out max(rowid) + 1, so deleting the newest rows would give their positions to the next append,
 * which a subscriber already past them would never read. It is pruned once anything is appended
 * after it.
 */
const chooseSql =
  'SELECT x.execution_id, e.sequence + 1 AS events, e.hash AS last_hash ' +
  'FROM loom_executions x ' +
  'JOIN loom_events e ON e.execution_id = x.execution_id AND e.sequence = (' +
  'SELECT max(sequence) FROM loom_events m WHERE m.execution_id = x.execution_id) ' +
  "WHERE x.status = 'settled' AND x.updated_at_ms < @endedBeforeMs " +
  'AND (@ids IS NULL OR x.execution_id IN (SELECT value FROM json_each(@ids))) ' +
  'AND x.execution_id IS NOT (SELECT execution_id FROM loom_events ORDER BY position DESC LIMIT 1) ' +
  'ORDER BY x.execution_id LIMIT @limit';

/** Every table keyed by execution id that prune empties, with the index that serves its delete. */
const prunedTables = [
  'loom_events', // loom_events_execution_sequence
  'loom_executions', // primary key
  'loom_fences', // primary key
  'loom_signals', // primary key (execution_id, signal_id)
  'loom_snapshots', // primary key
  'loom_leases', // primary key
  'loom_live_chunks', // loom_live_chunks_stream (execution_id, …)
] as const;

/** What the choose statement binds. */
export interface PruneChooseParameters {
  endedBeforeMs: number;
  /** JSON `[id, …]`, or null for any settled execution. */
  ids: string | null;
  limit: number;
}

/** A chosen row as better-sqlite3 returns it. */
export interface PruneChosenRow {
  execution_id: string;
  events: number;
  last_hash: string;
}

/** The prune statements, prepared once per store; run together in one IMMEDIATE transaction. */
export interface SqlitePruneStatements {
  pruneChoose: Database.Statement<[PruneChooseParameters], PruneChosenRow>;
  /** One delete per table, each binding a JSON array of the chosen ids. */
  pruneDeletes: Array<Database.Statement<[string]>>;
}

/** Prepares the prune statements. */
export function preparePruneStatements(db: Database.Database): SqlitePruneStatements {
  return {
    pruneChoose: db.prepare<[PruneChooseParameters], PruneChosenRow>(chooseSql),
    pruneDeletes: prunedTables.map((table) =>
      db.prepare<[string]>(
        `DELETE FROM ${table} WHERE execution_id IN (SELECT value FROM json_each(?))`,
      ),
    ),
  };
}
