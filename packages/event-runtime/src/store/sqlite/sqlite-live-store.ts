import type Database from 'better-sqlite3';
import { type CancelTimer, type Clock, systemClock } from '../../clock.js';
import { AppendSignal } from '../../internal/append-signal.js';
import { checkExecutionId } from '../../internal/check-execution-id.js';
import {
  checkLiveChunk,
  checkLiveName,
  checkPruneBound,
  liveReadOptions,
} from '../../internal/live-input.js';
import {
  type LiveChunk,
  type LiveChunkInput,
  type LiveReadOptions,
  type LiveStore,
  sqliteLivePollMsDefault,
} from '../../live-store.js';
import { mapSqliteError } from './sqlite-errors.js';
import { SqliteTableAccess } from './sqlite-table-access.js';

/** Options of {@link SqliteLiveStore}. */
export interface SqliteLiveStoreOptions {
  /** Stamps chunks (`atMs`) and arms the poll. Default: the wall clock. */
  clock?: Clock;
  /** Refuse writes with `STORE_READ_ONLY`. Always true on a read-only handle. Default false. */
  readOnly?: boolean;
  /** How often watchers poll for other processes' chunks. Default {@link sqliteLivePollMsDefault}. */
  pollIntervalMs?: number;
}

interface LiveRow {
  position: number;
  execution_id: string;
  stream: string;
  attempt: string;
  text_offset: number;
  text: string;
  at_ms: number;
}

function prepareStatements(db: Database.Database) {
  return {
    insert: db.prepare<[string, string, string, number, string, number]>(
      `INSERT INTO loom_live_chunks (execution_id, stream, attempt, text_offset, text, at_ms)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    ),
    read: db.prepare<[string, string, number, number], LiveRow>(
      `SELECT position, execution_id, stream, attempt, text_offset, text, at_ms
       FROM loom_live_chunks WHERE execution_id = ? AND stream = ? AND position > ?
       ORDER BY position LIMIT ?`,
    ),
    newest: db.prepare<[string], { position: number | null }>(
      'SELECT max(position) AS position FROM loom_live_chunks WHERE execution_id = ?',
    ),
    drop: db.prepare<[string, string]>(
      'DELETE FROM loom_live_chunks WHERE execution_id = ? AND stream = ?',
    ),
    prune: db.prepare<[number]>('DELETE FROM loom_live_chunks WHERE at_ms < ?'),
    synchronous: db.prepare('PRAGMA synchronous'),
    relaxed: db.prepare('PRAGMA synchronous = NORMAL'),
    full: db.prepare('PRAGMA synchronous = FULL'),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/**
 * The live channel in the SQLite file of a `SqliteEventStore`, on its connection (pass
 * `eventStore.database`), in the table of migration 8 ('live-chunks'). A write is one insert
 * committed without waiting for the disk (`synchronous = NORMAL` for that statement in WAL mode:
 * the text is live, a power cut may lose it, the log never loses anything); a wake reaches this
 * process's watchers at once and other processes' on their next poll (every `pollIntervalMs`
 * while anyone watches: one indexed `max(position)` probe per watched execution).
 *
 * Error codes: those of {@link LiveStore}.
 *
 * @example
 * const events = SqliteEventStore.open({ path: 'loom.db', migrate: true });
 * const live = new SqliteLiveStore(events.database);
 * await live.write({ executionId: 'run-1', stream: 'decide:1', attempt: 'a', offset: 0, text: 'Hi' });
 */
export class SqliteLiveStore implements LiveStore {
  readonly backend = 'sqlite';
  private readonly tables: SqliteTableAccess<Statements>;
  private readonly clock: Clock;
  private readonly pollIntervalMs: number;
  private readonly signal = new AppendSignal();
  /** The newest position seen per watched execution, so a poll wakes only on change. */
  private readonly seen = new Map<string, number>();
  private stopPolling: CancelTimer | undefined;
  private fullSync: boolean | undefined;

  constructor(database: Database.Database, options: SqliteLiveStoreOptions = {}) {
    this.tables = new SqliteTableAccess(
      database,
      'live',
      'live-chunks',
      prepareStatements,
      options.readOnly,
    );
    this.clock = options.clock ?? systemClock;
    this.pollIntervalMs = options.pollIntervalMs ?? sqliteLivePollMsDefault;
  }

  async write(input: LiveChunkInput): Promise<boolean> {
    this.tables.assertWritable('write a live chunk');
    const chunk = checkLiveChunk(input);
    const statements = this.tables.ready();
    let changes: number;
    try {
      // Live text is not owed to the disk: no fsync for it (the next FULL commit syncs the WAL).
      this.fullSync ??= (statements.synchronous.pluck().get() as number) >= 2;
      if (this.fullSync) statements.relaxed.run();
      try {
        changes = statements.insert.run(
          chunk.executionId,
          chunk.stream,
          chunk.attempt,
          chunk.offset,
          chunk.text,
          this.clock.now(),
        ).changes;
      } finally {
        if (this.fullSync) statements.full.run();
      }
    } catch (error) {
      throw mapSqliteError(error, 'write live chunk');
    }
    if (changes === 1) this.signal.emit(chunk.executionId);
    return changes === 1;
  }

  async read(executionId: string, stream: string, options?: LiveReadOptions): Promise<LiveChunk[]> {
    this.tables.assertOpen();
    const id = checkExecutionId(executionId);
    const name = checkLiveName(stream, 'stream');
    const { afterPosition, limit } = liveReadOptions(options);
    const { read } = this.tables.ready();
    let rows: LiveRow[];
    try {
      rows = read.all(id, name, afterPosition, limit);
    } catch (error) {
      throw mapSqliteError(error, 'read live chunks');
    }
    return rows.map((row) => ({
      executionId: row.execution_id,
      stream: row.stream,
      attempt: row.attempt,
      offset: row.text_offset,
      text: row.text,
      position: row.position,
      atMs: row.at_ms,
    }));
  }

  watch(executionId: string, wake: () => void): () => void {
    this.tables.assertOpen();
    const id = checkExecutionId(executionId);
    const unwatch = this.signal.watch(id, wake);
    // The newest position now: a chunk another process writes after this is seen by a poll.
    if (!this.seen.has(id)) this.seen.set(id, this.newest(id) ?? 0);
    if (this.stopPolling === undefined && this.pollIntervalMs > 0) {
      this.stopPolling = this.clock.setRepeating(() => this.poll(), this.pollIntervalMs);
    }
    let watching = true;
    queueMicrotask(() => {
      if (watching) wake();
    });
    return () => {
      if (!watching) return;
      watching = false;
      unwatch();
      if (!this.signal.watching(id)) this.seen.delete(id);
      if (this.seen.size === 0) {
        this.stopPolling?.();
        this.stopPolling = undefined;
      }
    };
  }

  async drop(executionId: string, stream: string): Promise<void> {
    this.tables.assertWritable('drop a live stream');
    const id = checkExecutionId(executionId);
    const name = checkLiveName(stream, 'stream');
    const statements = this.tables.ready();
    try {
      this.fullSync ??= (statements.synchronous.pluck().get() as number) >= 2;
      if (this.fullSync) statements.relaxed.run();
      try {
        statements.drop.run(id, name);
      } finally {
        if (this.fullSync) statements.full.run();
      }
    } catch (error) {
      throw mapSqliteError(error, 'drop live stream');
    }
  }

  async prune(beforeMs: number): Promise<number> {
    this.tables.assertWritable('prune live chunks');
    const bound = checkPruneBound(beforeMs);
    const { prune } = this.tables.ready();
    try {
      return prune.run(bound).changes;
    } catch (error) {
      throw mapSqliteError(error, 'prune live chunks');
    }
  }

  async close(): Promise<void> {
    this.stopPolling?.();
    this.stopPolling = undefined;
    this.seen.clear();
    this.tables.close();
  }

  /** One probe per watched execution; wakes those whose newest position moved. */
  private poll(): void {
    for (const [id, before] of this.seen) {
      const newest = this.newest(id);
      if (newest === undefined || newest === before) continue;
      this.seen.set(id, newest);
      this.signal.emit(id);
    }
  }

  /** The newest position of the execution's chunks (0: none); undefined when it cannot tell now. */
  private newest(executionId: string): number | undefined {
    if (!this.tables.database.open) return undefined;
    try {
      return this.tables.ready().newest.get(executionId)?.position ?? 0;
    } catch {
      return undefined; // not migrated, busy or closed: the next poll tries again
    }
  }
}
