import Database from 'better-sqlite3';
import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import type {
  AppendGuard,
  ClaimDueOptions,
  EventEnvelope,
  ExecutionSummary,
  FindExecutionsOptions,
  PrunedExecution,
  PruneOptions,
  ReadAllOptions,
  ReadOptions,
  ReadSignalsOptions,
  SignalInput,
  StoredEvent,
  StoredSignal,
} from '../../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../../errors.js';
import type {
  AppendOutcome,
  AppendRequest,
  BatchAppendingEventStore,
  FenceStore,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
  TransactionalEventStore,
  VerifyResult,
} from '../../event-store.js';
import { admitAppend } from '../../internal/admit-append.js';
import { AppendSignal } from '../../internal/append-signal.js';
import { checkClaimDue, checkUnclaimDue, claimedByOf } from '../../internal/claim-due-arguments.js';
import { findExecutionsWhere } from '../../internal/find-executions-query.js';
import { decodePayload } from '../../internal/json-codec.js';
import {
  checkExecutionId,
  type PreparedAppend,
  prepareAppend,
} from '../../internal/prepare-append.js';
import { prepareBatch } from '../../internal/prepare-batch.js';
import {
  type PreparedSignal,
  prepareSignal,
  readSignalsOptions,
  signalTargetMissing,
  signalTargetSettled,
} from '../../internal/prepare-signal.js';
import { checkPrune } from '../../internal/prune-arguments.js';
import { findExecutionsOptions, readAllOptions, readOptions } from '../../internal/read-options.js';
import { storeReadOnly } from '../../internal/store-errors.js';
import { StoreSubscriptions } from '../../internal/store-subscriptions.js';
import { rowToEvent, type StoredRow } from '../../internal/stored-row.js';
import { batchOfOneHook } from '../../internal/test-hooks.js';
import { verifyRows } from '../../internal/verify-rows.js';
import type { LeaseStore } from '../../lease-store.js';
import { mapSqliteError } from './sqlite-errors.js';
import { prepareEventStatements, type SqliteEventStatements } from './sqlite-event-statements.js';
import {
  findExecutionsSql,
  type SqliteExecutionRow,
  summaryFromSqlite,
} from './sqlite-find-executions-statement.js';
import { SqliteLeaseStore } from './sqlite-lease-store.js';
import { sqliteMigrations, sqliteSchemaVersion } from './sqlite-migrations.js';
import { storedRowFromSqlite } from './sqlite-read-statements.js';
import { SqliteTableAccess } from './sqlite-table-access.js';

/** The event store needs every migration this code knows (the newest one's name). */
const latestMigration = (sqliteMigrations[sqliteMigrations.length - 1] as { name: string }).name;

export interface SqliteEventStoreOptions {
  /** Database file (created on a writable open). */
  path: string;
  /** Open without writing anything: never creates the file, never migrates. Default false. */
  readOnly?: boolean;
  /** Apply pending migrations while opening (same as calling `migrate()`). Default false. */
  migrate?: boolean;
  clock?: Clock;
  /** How long a writer waits for another process's write lock. Default 5,000 ms. */
  busyTimeoutMs?: number;
  /** `FULL` (default) syncs every commit; `NORMAL` may lose the last commits on power loss. */
  synchronous?: 'FULL' | 'NORMAL';
  /** How often subscriptions look for other processes' appends. Default 250 ms; 0 = never. */
  pollIntervalMs?: number;
}

/**
 * The event log in one SQLite file (better-sqlite3 12.x): WAL, `synchronous=FULL` when opened
 * for writing, a busy timeout for other processes, cached prepared statements. Appends are
 * transactions (`BEGIN IMMEDIATE`), so two processes on one file serialize and exactly one
 * wins a sequence.
 *
 * Error codes: those of {@link EventStore}, plus `SCHEMA_NOT_MIGRATED`, `SCHEMA_TOO_NEW` and
 * `STORE_UNAVAILABLE` (the file cannot be opened) from `open`.
 *
 * @example
 * const store = SqliteEventStore.open({ path: 'loom.db', migrate: true });
 * await store.append([{ executionId: 'order-1', sequence: 0, type: 'execution.started', payload: {} }]);
 * console.log(await store.verify('order-1'));
 */
export class SqliteEventStore implements TransactionalEventStore, BatchAppendingEventStore {
  readonly backend = 'sqlite';
  readonly fences: FenceStore;
  /** The better-sqlite3 handle (for kernel tables that share the file and its transactions). */
  readonly database: Database.Database;
  readonly readOnly: boolean;
  private readonly clock: Clock;
  private readonly pollIntervalMs: number;
  private readonly signal = new AppendSignal();
  private readonly subscriptions: StoreSubscriptions;
  /** The closed guard and the statements, prepared once the schema is known to be current. */
  private readonly tables: SqliteTableAccess<SqliteEventStatements>;
  /** findExecutions statements by filter shape (a few dozen at most). */
  private readonly findStatements = new Map<string, Database.Statement>();
  private closed = false;
  private batchOfOnePlain = true;
  private leases: SqliteLeaseStore | undefined;

  private constructor(database: Database.Database, options: SqliteEventStoreOptions) {
    this.database = database;
    this.readOnly = options.readOnly ?? false;
    this.clock = options.clock ?? systemClock;
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    this.tables = new SqliteTableAccess(
      database,
      'event',
      latestMigration,
      prepareEventStatements,
      this.readOnly,
    );
    this.subscriptions = new StoreSubscriptions(this, {
      watch: (executionId, wake) => this.signal.watch(executionId, wake),
      pollIntervalMs: this.pollIntervalMs,
      clock: this.clock,
    });
    this.fences = {
      current: async (executionId) => {
        const statements = this.ready();
        return statements.fence.get(checkExecutionId(executionId))?.epoch ?? 0;
      },
      advance: async (executionId) => {
        const statements = this.ready('advance a fence');
        checkExecutionId(executionId);
        try {
          return (statements.advanceFence.get(executionId) as { epoch: number }).epoch;
        } catch (error) {
          throw mapSqliteError(error, 'fences.advance');
        }
      },
    };
  }

  /**
   * The lease store in this database file, on this connection (`new SqliteLeaseStore(database)`
   * with this store's clock), made once: what a runtime given no `leases` uses. Undefined on a
   * read-only store.
   */
  defaultLeaseStore(): LeaseStore | undefined {
    if (this.readOnly) return undefined;
    this.leases ??= new SqliteLeaseStore(this.database, { clock: this.clock });
    return this.leases;
  }

  /**
   * Opens (and for a writable open, creates) the database file.
   * Throws `STORE_UNAVAILABLE` when the file cannot be opened (a read-only open of a missing
   * file included) and `SCHEMA_TOO_NEW` when a newer Loom wrote its schema.
   */
  static open(options: SqliteEventStoreOptions): SqliteEventStore {
    const readOnly = options.readOnly ?? false;
    let database: Database.Database;
    try {
      database = new Database(options.path, { readonly: readOnly, fileMustExist: readOnly });
    } catch (error) {
      throw new LoomError(
        ErrorCode.STORE_UNAVAILABLE,
        `cannot open SQLite database ${options.path}${readOnly ? ' read-only (it must exist)' : ''}: ${(error as Error).message}`,
        { path: options.path },
        error,
      );
    }
    try {
      database.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000))}`);
      if (!readOnly) {
        database.pragma('journal_mode = WAL');
        database.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
      }
      const version = database.pragma('user_version', { simple: true }) as number;
      if (version > sqliteSchemaVersion) {
        throw new LoomError(
          ErrorCode.SCHEMA_TOO_NEW,
          `SQLite database ${options.path} has schema version ${version}, but this Loom knows up to ` +
            `${sqliteSchemaVersion}: upgrade @loom/event-runtime before opening it`,
          { path: options.path, expected: sqliteSchemaVersion, actual: version },
        );
      }
    } catch (error) {
      database.close();
      throw isLoomError(error) ? error : mapSqliteError(error, 'open');
    }
    const store = new SqliteEventStore(database, options);
    if (options.migrate === true) store.migrateSync();
    return store;
  }

  /** Applies pending migrations in one transaction. Throws `STORE_READ_ONLY` on a read-only open. */
  async migrate(): Promise<void> {
    this.migrateSync();
  }

  private migrateSync(): void {
    this.assertOpen();
    if (this.readOnly) throw storeReadOnly(this.backend, 'migrate');
    try {
      this.database
        .transaction(() => {
          const version = this.database.pragma('user_version', { simple: true }) as number;
          for (const migration of sqliteMigrations) {
            if (migration.version <= version) continue;
            this.database.exec(migration.sql);
            this.database.pragma(`user_version = ${migration.version}`);
          }
        })
        .immediate();
    } catch (error) {
      throw mapSqliteError(error, 'migrate');
    }
  }

  /** The prepared statements, once the schema is known to be current. */
  private ready(writeOperation?: string): SqliteEventStatements {
    this.assertOpen();
    if (writeOperation !== undefined && this.readOnly) {
      throw storeReadOnly(this.backend, writeOperation);
    }
    return this.tables.ready();
  }

  async append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]> {
    const statements = this.ready('append');
    const prepared = prepareAppend(envelopes, guard, this.clock.now());
    let stored: StoredEvent[];
    try {
      stored = this.database
        .transaction(() => this.appendInTransaction(statements, prepared))
        .immediate();
    } catch (error) {
      throw isLoomError(error) ? error : mapSqliteError(error, 'append');
    }
    this.signal.emit(prepared.executionId);
    return stored;
  }

  /**
   * Appends for many executions in one `BEGIN IMMEDIATE` transaction, so one commit and, with
   * `synchronous=FULL`, one fsync for the whole batch (what `CoalescingEventStore` sends; ADR
   * 0030). Each request is checked and written inside its own savepoint: a request refused by its
   * fence or its sequence (or invalid) gets its typed error in its outcome, and the others
   * commit. A failure of the transaction itself (the commit, a locked file) fails every request.
   * Rejects with `STORE_CLOSED`, `STORE_READ_ONLY`.
   */
  /** Test hook: whether `appendBatch` of one request takes the plain append (default true). */
  [batchOfOneHook](plainPath: boolean): void {
    this.batchOfOnePlain = plainPath;
  }

  async appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    const statements = this.ready('append');
    const outcomes: AppendOutcome[] = new Array(requests.length);
    const fail = (index: number, error: unknown) => {
      outcomes[index] = {
        ok: false,
        error: isLoomError(error) ? error : mapSqliteError(error, 'append'),
      };
    };
    if (requests.length === 1 && this.batchOfOnePlain) {
      // Nothing to merge: skip the savepoint (measured at c = 1).
      const request = requests[0] as AppendRequest;
      try {
        outcomes[0] = { ok: true, stored: await this.append(request.envelopes, request.guard) };
      } catch (error) {
        fail(0, error);
      }
      return outcomes;
    }
    const prepared = prepareBatch(requests, this.clock.now(), fail);
    if (prepared.size === 0) return outcomes;
    // A transaction function called inside another runs in a savepoint (better-sqlite3).
    const one = this.database.transaction((append: PreparedAppend) =>
      this.appendInTransaction(statements, append),
    );
    try {
      this.database
        .transaction(() => {
          for (const [index, append] of prepared) {
            try {
              outcomes[index] = { ok: true, stored: one(append) };
            } catch (error) {
              // Refusals are LoomErrors; anything else may have ended the transaction: fail all.
              if (!isLoomError(error)) throw error;
              outcomes[index] = { ok: false, error };
            }
          }
        })
        .immediate();
    } catch (error) {
      for (const [index] of prepared) fail(index, error);
      return outcomes;
    }
    for (const [index, append] of prepared) {
      if (outcomes[index]?.ok === true) this.signal.emit(append.executionId);
    }
    return outcomes;
  }

  private appendInTransaction(
    statements: SqliteEventStatements,
    prepared: PreparedAppend,
  ): StoredEvent[] {
    const { executionId } = prepared;
    const stored = admitAppend(prepared, {
      epoch: () => statements.fence.get(executionId)?.epoch ?? 0,
      tail: () => statements.tail.get(executionId),
    });
    for (let index = 0; index < stored.length; index++) {
      const event = stored[index] as StoredEvent;
      const info = statements.insert.run(
        executionId,
        event.sequence,
        event.type,
        prepared.events[index]?.payloadText as string,
        event.at,
        event.prevHash,
        event.hash,
      );
      event.position = Number(info.lastInsertRowid);
    }
    const index = prepared.status;
    if (index !== undefined) {
      statements.upsertExecution.run(
        executionId,
        index.status,
        index.wakeAtMs,
        index.updatedAtMs,
        index.settledAs,
        index.flow,
        index.version,
        index.createdAtMs,
        index.startedBy,
        index.waitingFor,
        prepared.wakeOnSignalsAfter ?? null,
        prepared.wakeOnSignalsAfter ?? null,
      );
    }
    if (prepared.notify !== undefined) this.signalInTransaction(statements, prepared.notify, true);
    return stored;
  }

  /**
   * Runs `work(database)` and appends `envelopes(result)` in one SQLite transaction: both commit
   * or neither does. `work` must be synchronous (better-sqlite3 cannot hold a transaction across
   * an await); a `work` that returns a promise is refused with `INVALID_ARGUMENT`. Errors thrown
   * by `work` are rethrown unchanged, after the rollback.
   */
  async transact<T>(
    work: (tx: unknown) => T | Promise<T>,
    envelopes: (result: T) => readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<{ result: T; stored: StoredEvent[] }> {
    const statements = this.ready('transact');
    let fromWork: { error: unknown } | undefined;
    let outcome: { result: T; stored: StoredEvent[] };
    try {
      outcome = this.database
        .transaction(() => {
          let result: T;
          try {
            result = work(this.database) as T;
            if (typeof (result as { then?: unknown })?.then === 'function') {
              throw new LoomError(
                ErrorCode.INVALID_ARGUMENT,
                'a SQLite transactional step must be synchronous: better-sqlite3 cannot hold a ' +
                  'transaction across an await (do the async work in an ordinary step first)',
              );
            }
          } catch (error) {
            fromWork = { error };
            throw error;
          }
          const prepared = prepareAppend(envelopes(result), guard, this.clock.now());
          return { result, stored: this.appendInTransaction(statements, prepared) };
        })
        .immediate();
    } catch (error) {
      if (fromWork !== undefined || isLoomError(error)) throw error;
      throw mapSqliteError(error, 'transact');
    }
    const first = outcome.stored[0];
    if (first !== undefined) this.signal.emit(first.executionId);
    return outcome;
  }

  async read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    return this.readRows(executionId, options).map(rowToEvent);
  }

  private readRows(executionId: string, options?: ReadOptions): StoredRow[] {
    const statements = this.ready();
    const { fromSequence, limit } = readOptions(options);
    checkExecutionId(executionId);
    try {
      return statements.read.all(executionId, fromSequence, limit).map(storedRowFromSqlite);
    } catch (error) {
      throw mapSqliteError(error, 'read');
    }
  }

  async readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    const statements = this.ready();
    const { afterPosition, limit } = readAllOptions(options);
    try {
      return statements.readAll
        .all(afterPosition, limit)
        .map((raw) => rowToEvent(storedRowFromSqlite(raw)));
    } catch (error) {
      throw mapSqliteError(error, 'readAll');
    }
  }

  async findExecutions(options: FindExecutionsOptions): Promise<ExecutionSummary[]> {
    this.ready();
    const filter = findExecutionsOptions(options);
    const where = findExecutionsWhere(filter, () => '?');
    try {
      let statement = this.findStatements.get(where.shape);
      if (statement === undefined) {
        statement = this.database.prepare(findExecutionsSql(where.conditions));
        this.findStatements.set(where.shape, statement);
      }
      const rows = statement.all(...where.values, filter.limit) as SqliteExecutionRow[];
      return rows.map(summaryFromSqlite);
    } catch (error) {
      throw mapSqliteError(error, 'findExecutions');
    }
  }

  async sendSignal(input: SignalInput): Promise<{ signalId: number; duplicate: boolean }> {
    const statements = this.ready('send a signal');
    const signal = prepareSignal(input, this.clock.now());
    try {
      return this.database
        .transaction(
          () =>
            this.signalInTransaction(statements, signal, false) as {
              signalId: number;
              duplicate: boolean;
            },
        )
        .immediate();
    } catch (error) {
      throw isLoomError(error) ? error : mapSqliteError(error, 'sendSignal');
    }
  }

  /**
   * `sendSignal`'s write, inside the caller's transaction; `quiet` (an append's `notify`) skips a
   * missing or settled target instead of throwing, returning undefined.
   */
  private signalInTransaction(
    statements: SqliteEventStatements,
    signal: PreparedSignal,
    quiet: boolean,
  ): { signalId: number; duplicate: boolean } | undefined {
    const { executionId } = signal;
    if (statements.started.get(executionId) === undefined) {
      if (quiet) return undefined;
      throw signalTargetMissing(executionId);
    }
    const status = statements.status.get(executionId)?.status;
    // The key first: a signal sent again after its target settled is still a duplicate.
    if (signal.idempotencyKey !== null) {
      const existing = statements.signalByKey.get(executionId, signal.idempotencyKey);
      if (existing !== undefined) return { signalId: existing.signal_id, duplicate: true };
    }
    if (status === 'settled') {
      if (quiet) return undefined;
      throw signalTargetSettled(executionId);
    }
    const signalId = (statements.nextSignalId.get(executionId) as { next: number }).next;
    statements.insertSignal.run(
      executionId,
      signalId,
      signal.name,
      signal.payloadText,
      signal.idempotencyKey,
      signal.at,
    );
    if (status === 'suspended') statements.wakeSuspended.run(signal.at, executionId);
    return { signalId, duplicate: false };
  }

  async readSignals(executionId: string, options?: ReadSignalsOptions): Promise<StoredSignal[]> {
    const statements = this.ready();
    const { afterSignalId, limit } = readSignalsOptions(options);
    checkExecutionId(executionId);
    try {
      const rows = statements.readSignals.all(executionId, afterSignalId, limit);
      return rows.map((row) => ({
        executionId: row.execution_id,
        signalId: row.signal_id,
        name: row.name,
        payload: decodePayload(row.payload),
        idempotencyKey: row.idempotency_key,
        at: row.at,
      }));
    } catch (error) {
      throw mapSqliteError(error, 'readSignals');
    }
  }

  async claimDue(nowMs: number, limit: number, options?: ClaimDueOptions): Promise<string[]> {
    const statements = this.ready('claim due executions');
    const flows = checkClaimDue(nowMs, limit, options);
    const claimedBy = claimedByOf(options);
    try {
      const rows = statements.claimDue.all({
        claimedAtMs: this.clock.now(),
        claimedBy,
        nowMs,
        flows:
          flows === undefined
            ? null
            : JSON.stringify(flows.map((flow) => [flow.name, flow.version])),
        limit,
      });
      return rows.map((row) => row.execution_id);
    } catch (error) {
      throw mapSqliteError(error, 'claimDue');
    }
  }

  async unclaimDue(executionIds: readonly string[], nowMs: number): Promise<string[]> {
    const statements = this.ready('give back claimed executions');
    const ids = checkUnclaimDue(executionIds, nowMs);
    if (ids.length === 0) return [];
    try {
      const rows = statements.unclaimDue.all({
        unclaimedAtMs: this.clock.now(),
        nowMs,
        ids: JSON.stringify(ids),
      });
      return rows.map((row) => row.execution_id);
    } catch (error) {
      throw mapSqliteError(error, 'unclaimDue');
    }
  }

  /**
   * Removes settled executions that ended before `options.endedBeforeMs` in one IMMEDIATE
   * transaction: the choice and every table's delete (sqlite-prune-statements.ts) see one
   * writer's view, so an append cannot land between them. Throws `INVALID_ARGUMENT`,
   * `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`, `STORE_*`.
   */
  async prune(options: PruneOptions): Promise<PrunedExecution[]> {
    const statements = this.ready('prune executions');
    const { endedBeforeMs, executionIds, limit } = checkPrune(options);
    if (executionIds?.length === 0) return [];
    try {
      return this.database
        .transaction(() => {
          const chosen = statements.pruneChoose.all({
            endedBeforeMs,
            ids: executionIds === undefined ? null : JSON.stringify(executionIds),
            limit,
          });
          if (chosen.length === 0) return [];
          const ids = JSON.stringify(chosen.map((row) => row.execution_id));
          for (const remove of statements.pruneDeletes) remove.run(ids);
          return chosen.map((row) => ({
            executionId: row.execution_id,
            events: row.events,
            lastHash: row.last_hash,
          }));
        })
        .immediate();
    } catch (error) {
      throw mapSqliteError(error, 'prune');
    }
  }

  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    this.ready();
    return this.subscriptions.subscribe(options, handler);
  }

  async verify(executionId: string): Promise<VerifyResult> {
    const rows: StoredRow[] = [];
    for (;;) {
      const page = this.readRows(executionId, { fromSequence: rows.length });
      rows.push(...page);
      if (page.length === 0) break;
    }
    return verifyRows(executionId, rows);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.subscriptions.closeAll();
    this.closed = true;
    this.tables.close();
    this.database.close();
  }

  private assertOpen(): void {
    this.tables.assertOpen();
  }
}
