import type Database from 'better-sqlite3';
import type { EventStore } from '../../event-store.js';
import { decodePayload } from '../../internal/json-codec.js';
import { checkExecutionId } from '../../internal/prepare-append.js';
import { prepareSnapshot } from '../../internal/prepare-snapshot.js';
import { readOptions } from '../../internal/read-options.js';
import { readTarget } from '../../internal/read-target.js';
import type { Snapshot, SnapshotStore, SnapshotWithTail } from '../../snapshot-store.js';
import { mapSqliteError } from './sqlite-errors.js';
import { SqliteEventStore } from './sqlite-event-store.js';
import { loadSql, type SnapshotRow, saveSql } from './sqlite-snapshot-statements.js';
import { SqliteTableAccess } from './sqlite-table-access.js';

/** Options of {@link SqliteSnapshotStore}. */
export interface SqliteSnapshotStoreOptions {
  /** Refuse saves with `STORE_READ_ONLY`. Always true on a read-only handle. Default false. */
  readOnly?: boolean;
}

function prepareStatements(db: Database.Database) {
  return {
    save: db.prepare<[{ executionId: string; sequence: number; stateText: string; at: number }]>(
      saveSql,
    ),
    load: db.prepare<[string], SnapshotRow>(loadSql),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/**
 * The newest snapshot per execution, in the SQLite file of a `SqliteEventStore`, on its
 * connection (pass `eventStore.database`). State is stored as its exact JSON text (`-0` and key
 * order kept) and decoded afresh on every load. The table comes from migration 2
 * ('leases-and-snapshots'); an older schema is refused.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` (bad id, sequence or `at`; state over
 * `snapshotBytesMax` or `payloadDepthMax`), `PAYLOAD_NOT_JSON`, `SCHEMA_NOT_MIGRATED`,
 * `SCHEMA_TOO_NEW`, `STORE_READ_ONLY`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`,
 * `STORE_FAILURE`.
 *
 * @example
 * const events = SqliteEventStore.open({ path: 'loom.db', migrate: true });
 * const snapshots = new SqliteSnapshotStore(events.database);
 * await snapshots.save({ executionId: 'order-1', sequence: 40, state: { paid: true }, at: Date.now() });
 * const newest = await snapshots.load('order-1');
 */
export class SqliteSnapshotStore implements SnapshotStore {
  readonly backend = 'sqlite';
  private readonly tables: SqliteTableAccess<Statements>;
  private readonly database: Database.Database;

  /** True when opened read-only (or on a read-only handle): writes fail with `STORE_READ_ONLY`. */
  get readOnly(): boolean {
    return this.tables.readOnly;
  }

  /**
   * Wraps an open better-sqlite3 handle; touches nothing until the first call, so it may be
   * created before `migrate()`. The store never closes the handle: its owner does.
   */
  constructor(database: Database.Database, options: SqliteSnapshotStoreOptions = {}) {
    this.database = database;
    this.tables = new SqliteTableAccess(
      database,
      'snapshot',
      'leases-and-snapshots',
      prepareStatements,
      options.readOnly,
    );
  }

  /**
   * Stores `snapshot` unless one at the same or a later sequence is already stored.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async save(snapshot: Snapshot): Promise<void> {
    this.tables.assertWritable('save a snapshot');
    const prepared = prepareSnapshot(snapshot);
    const { save } = this.tables.ready();
    try {
      save.run(prepared);
    } catch (error) {
      throw mapSqliteError(error, 'save snapshot');
    }
  }

  /**
   * The newest snapshot of `executionId` (state decoded afresh on every call), or undefined.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `SCHEMA_NOT_MIGRATED`, `STORE_CLOSED`,
   * `STORE_FAILURE`.
   */
  async load(executionId: string): Promise<Snapshot | undefined> {
    this.tables.assertOpen();
    checkExecutionId(executionId);
    const { load } = this.tables.ready();
    let row: SnapshotRow | undefined;
    try {
      row = load.get(executionId);
    } catch (error) {
      throw mapSqliteError(error, 'load snapshot');
    }
    if (row === undefined) return undefined;
    return { executionId, sequence: row.sequence, state: decodePayload(row.state), at: row.at };
  }

  /**
   * The newest snapshot and up to `limit` events after it (from sequence 0 without one) in one
   * call, when `events` is a `SqliteEventStore` on this store's database handle; undefined for
   * any other store (then load and read separately). SQLite has no round trip to save: the two
   * prepared statements run back to back (~2 µs for the snapshot probe), which measured faster
   * than one compound statement (ADR 0032). Throws `INVALID_ARGUMENT` for a `limit` outside
   * 1..readLimitMax, and what `load` and `events.read` throw.
   */
  async loadWithTail(
    events: EventStore,
    executionId: string,
    limit: number,
  ): Promise<SnapshotWithTail | undefined> {
    readOptions({ limit });
    const target = readTarget(events);
    if (!(target instanceof SqliteEventStore) || target.database !== this.database)
      return undefined;
    const snapshot = await this.load(executionId);
    const fromSequence = snapshot === undefined ? 0 : snapshot.sequence + 1;
    return { snapshot, events: await target.read(executionId, { fromSequence, limit }) };
  }

  /** Further calls fail with `STORE_CLOSED`. Leaves the database handle open. Idempotent. */
  async close(): Promise<void> {
    this.tables.close();
  }
}
