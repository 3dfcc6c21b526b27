import type { ClientBase, Pool } from 'pg';
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
import { checkClaimDue, checkUnclaimDue, claimedByOf } from '../../internal/claim-due-arguments.js';
import {
  chainEvents,
  checkExecutionId,
  type PreparedAppend,
  prepareAppend,
} from '../../internal/prepare-append.js';
import {
  type PreparedSignal,
  prepareSignal,
  readSignalsOptions,
} from '../../internal/prepare-signal.js';
import { checkPrune } from '../../internal/prune-arguments.js';
import { findExecutionsOptions, readAllOptions, readOptions } from '../../internal/read-options.js';
import {
  alreadyStarted,
  fenceStale,
  sequenceConflict,
  storeClosed,
  storeReadOnly,
} from '../../internal/store-errors.js';
import { StoreSubscriptions } from '../../internal/store-subscriptions.js';
import { rowToEvent, type StoredRow } from '../../internal/stored-row.js';
import { batchOfOneHook, listenerHook, rememberTailHook } from '../../internal/test-hooks.js';
import { verifyRows } from '../../internal/verify-rows.js';
import type { LeaseStore } from '../../lease-store.js';
import { Limits } from '../../limits.js';
import { type AppendBatchContext, appendBatch } from './append-batch.js';
import { type AppendedRow, appendValues } from './append-statement.js';
import {
  findExecutionsQuery,
  type PgExecutionRow,
  summaryFromPg,
} from './find-executions-statement.js';
import { migratePool, type PostgresMigrateResult } from './migrate.js';
import { eventLogMigration } from './migrations/0001-event-log.js';
import { signalsMigration } from './migrations/0003-signals.js';
import { executionIndexDetailsMigration } from './migrations/0005-execution-index-details.js';
import { signalMarkMigration } from './migrations/0007-signal-mark.js';
import { startedByMigration } from './migrations/0008-started-by.js';
import { liveChunksMigration } from './migrations/0009-live-chunks.js';
import { latestSchemaVersion } from './migrations/migration-list.js';
import { NotifyHub } from './notify-hub.js';
import { checkOut } from './pg-client.js';
import {
  classifyPgError,
  isWrongServer,
  schemaNotMigrated,
  schemaTooNew,
  toLoomError,
} from './pg-errors.js';
import { resolvePool } from './pg-pool.js';
import type { PgStatement } from './pg-statement.js';
import { type AppendFeedSource, PolledAppendFeed } from './polled-append-feed.js';
import { PostgresLeaseStore } from './postgres-lease-store.js';
import {
  type PostgresEventStoreOptions,
  type ResolvedStoreOptions,
  resolveStoreOptions,
} from './postgres-store-options.js';
import type { PgReadAllRow } from './read-all-statement.js';
import { beginReadCommitted } from './read-committed.js';
import { type PgSignalRow, signalFromPg } from './read-signals-statement.js';
import { type PgEventRow, rowFromPg } from './read-statement.js';
import { quoteIdent } from './schema-name.js';
import { readSchemaVersion } from './schema-version.js';
import {
  type PgSentSignalRow,
  sendSignalAttemptsMax,
  sendSignalValues,
  signalSent,
} from './send-signal-statement.js';
import { type StoreStatements, storeStatements } from './store-statements.js';
import { TailCache } from './tail-cache.js';

/** Counters a test or a benchmark can read (a snapshot; never reset). */
export interface PostgresEventStoreStats {
  /** Statements this store sent through its pool, each one round trip (migrate excluded). */
  roundTrips: number;
  /** Notifications its listener connection received. */
  notifications: number;
  /**
   * Notify statements it sent to announce its committed appends (ADR 0028): after the commit,
   * off the caller's path, so not in `roundTrips` nor reported to `onQuery`. Under load one
   * statement announces many appends.
   */
  notifyStatements: number;
  /** Notify statements that failed: their appends reach other processes by polling instead. */
  notifyFailures: number;
  /**
   * With `notifications: 'poll'`: tip statements sent to find other processes' appends (one per
   * `pollIntervalMs` while anything is subscribed, off the caller's path, so not in `roundTrips`
   * nor reported to `onQuery`). 0 in `listen` mode.
   */
  pollStatements: number;
}

/** The schema version that created the log's tables: older schemas are not migrated. */
const requiredSchemaVersion = eventLogMigration.version;

/**
 * The schema version whose execution index has flow, version, creation time and how it settled:
 * appends write them and `findExecutions` filters on them.
 */
const indexSchemaVersion = executionIndexDetailsMigration.version;

/**
 * The schema version that created the inboxes. `sendSignal`, `readSignals` and `claimDue` need
 * it; the log's own calls keep working on an older schema until someone migrates it.
 */
const signalsSchemaVersion = signalsMigration.version;

/**
 * The schema version whose index rows carry the inbox's newest signal id, which appends (a
 * suspension's guard) and `sendSignal` write and read (ADR 0033).
 */
const signalMarkSchemaVersion = signalMarkMigration.version;

/**
 * The schema version whose index rows say which node started an execution lazily: appends
 * write it (from `execution.started`), recovery reads it through `findExecutions`.
 */
const startedBySchemaVersion = startedByMigration.version;

/** The schema version whose tables are all there: prune deletes from each of them. */
const pruneSchemaVersion = liveChunksMigration.version;

/**
 * The event log on Postgres (`pg`): named prepared statements, one round trip per append on a
 * warm cache, NOTIFY on bucketed channels for subscriptions (sent after the commit, folded
 * across appends: ADR 0028), one LISTEN connection per store.
 * Opening never creates or migrates anything: run {@link PostgresEventStore.migrate} (or the
 * `migrate` function) once per schema. `readAll` returns a commit-safe order in which positions
 * are unique but not necessarily increasing (see README).
 *
 * Error codes: those of {@link EventStore}, plus `SCHEMA_NOT_MIGRATED` and `SCHEMA_TOO_NEW`.
 */
export class PostgresEventStore implements TransactionalEventStore, BatchAppendingEventStore {
  readonly backend = 'postgres';
  readonly fences: FenceStore;
  /** The Postgres schema holding this store's tables. */
  readonly schema: string;
  /** True when opened with `readOnly`: every write is `STORE_READ_ONLY`. */
  readonly readOnly: boolean;
  private roundTrips = 0;
  private readonly pool: Pool;
  private readonly ownsPool: boolean;
  private readonly options: ResolvedStoreOptions;
  private leases: PostgresLeaseStore | undefined;
  private readonly sql: StoreStatements;
  private readonly tails: TailCache;
  private readonly notifications: AppendFeedSource;
  private readonly subscriptions: StoreSubscriptions;
  /** The schema version last found (0: none, or not checked yet). Raised by `migrate()`. */
  private schemaVersion = 0;
  private closed = false;
  private batchContext: AppendBatchContext | undefined;
  private batchOfOnePlain = true;

  /**
   * Opens a store on a schema and checks its version (one round trip). A schema that does not
   * exist yet is fine here: calls then fail with `SCHEMA_NOT_MIGRATED` until someone migrates
   * it. Throws
   * `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`, `INVALID_ARGUMENT`.
   *
   * @example
   * const store = await PostgresEventStore.open({ connectionString: 'postgres://localhost/app' });
   * await store.migrate(); // once per schema, e.g. at deploy time
   * await store.append([{ executionId: 'order-1', sequence: 0, type: 'execution.started', payload: {} }]);
   */
  static async open(options: PostgresEventStoreOptions = {}): Promise<PostgresEventStore> {
    const resolved = resolveStoreOptions(options);
    const store = new PostgresEventStore(resolvePool(options), resolved);
    try {
      await store.inspectSchema();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  private constructor(pool: { pool: Pool; owned: boolean }, options: ResolvedStoreOptions) {
    this.pool = pool.pool;
    this.ownsPool = pool.owned;
    this.options = options;
    this.schema = options.schema;
    this.readOnly = options.readOnly;
    this.sql = storeStatements(options.schema);
    this.tails = new TailCache(options.tailCacheEntries);
    const polled = options.notifications === 'poll';
    this.notifications = polled
      ? new PolledAppendFeed(this.pool, options.schema, options.pollIntervalMs, options.clock)
      : new NotifyHub(this.pool, options.schema, options.notifyBuckets, options.clock);
    this.subscriptions = new StoreSubscriptions(this, {
      watch: (executionId, wake) => this.notifications.watch(executionId, wake),
      // In poll mode the feed's one batched tip statement per interval is the poll.
      pollIntervalMs: polled ? 0 : options.pollIntervalMs,
      clock: options.clock,
    });
    this.fences = {
      current: async (executionId) => {
        this.assertOpen();
        return this.currentEpoch(checkExecutionId(executionId));
      },
      advance: async (executionId) => {
        this.assertWritable('advance a fence');
        const id = checkExecutionId(executionId);
        await this.requireSchema();
        const rows = await this.run<{ epoch: string }>(
          this.sql.fenceAdvance,
          [id],
          'fences.advance',
        );
        return Number(rows[0]?.epoch);
      },
    };
  }

  /**
   * Creates or upgrades this store's schema (see `migrate`). Throws `STORE_READ_ONLY`,
   * `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`, `STORE_FAILURE`.
   */
  async migrate(): Promise<PostgresMigrateResult> {
    this.assertWritable('migrate');
    const result = await migratePool(this.pool, this.schema);
    this.schemaVersion = result.toVersion;
    return result;
  }

  /**
   * Appends atomically in one round trip (two on a cold tail cache). Throws
   * `EXECUTION_ALREADY_STARTED`, `SEQUENCE_CONFLICT`, `FENCE_STALE`, `INVALID_ENVELOPE`,
   * `PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`, `SCHEMA_NOT_MIGRATED`, `STORE_*`.
   */
  async append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]> {
    this.assertWritable('append');
    const prepared = prepareAppend(envelopes, guard, this.options.clock.now());
    // A signal to deliver in the same write (a child's end waking its parent): the append and the
    // signal's statement in one transaction. Rare (one per child), so the hot path keeps its one
    // statement.
    if (prepared.notify !== undefined)
      return (
        await this.transact(
          () => undefined,
          () => envelopes,
          guard,
        )
      ).stored;
    if (this.schemaVersion < startedBySchemaVersion)
      await this.requireSchema(startedBySchemaVersion);
    const stored = await this.writePrepared(prepared, async (statement, values) => {
      try {
        return await this.send<AppendedRow>(statement, values);
      } catch (error) {
        throw await this.appendFailure(error, prepared.executionId, prepared.firstSequence);
      }
    });
    this.appended(stored);
    return stored;
  }

  /**
   * Appends for many executions in one statement, so one transaction and one commit, all or
   * nothing per request (see {@link BatchAppendingEventStore}; ADR 0030): one round trip on a
   * warm tail cache, one more to fetch the previous hashes the cache lacks. What
   * `CoalescingEventStore` merges concurrent appends into. Outcomes carry the errors `append`
   * throws; rejects with `STORE_CLOSED`, `STORE_READ_ONLY`, `SCHEMA_NOT_MIGRATED`.
   */
  async appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    this.assertWritable('append');
    if (this.schemaVersion < startedBySchemaVersion)
      await this.requireSchema(startedBySchemaVersion);
    this.batchContext ??= {
      now: () => this.options.clock.now(),
      statements: this.sql,
      cachedHash: (executionId, sequence) => this.tails.hashAt(executionId, sequence),
      remember: (executionId, sequence, hash) => this.tails.remember(executionId, sequence, hash),
      send: (statement, values) => this.send(statement, values),
      mapError: (error, operation) => this.mapError(error, operation),
      nextSequence: (executionId) => this.nextSequence(executionId),
      appendOne: (request) => this.append(request.envelopes, request.guard),
      appended: (stored) => this.appended(stored),
      batchOfOnePlain: () => this.batchOfOnePlain,
    };
    // A request with a signal to deliver goes on its own (a transaction of its own, see `append`).
    if (!requests.some((request) => request.guard?.notify !== undefined))
      return appendBatch(this.batchContext, requests);
    const plain = requests.filter((request) => request.guard?.notify === undefined);
    const [batched, single] = await Promise.all([
      plain.length === 0 ? [] : appendBatch(this.batchContext, plain),
      Promise.all(
        requests
          .filter((request) => request.guard?.notify !== undefined)
          .map((request) =>
            this.append(request.envelopes, request.guard).then(
              (stored): AppendOutcome => ({ ok: true, stored }),
              (error: unknown): AppendOutcome => {
                if (!isLoomError(error)) throw error;
                return { ok: false, error };
              },
            ),
          ),
      ),
    ]);
    let nextBatched = 0;
    let nextSingle = 0;
    return requests.map((request) =>
      request.guard?.notify === undefined
        ? (batched[nextBatched++] as AppendOutcome)
        : (single[nextSingle++] as AppendOutcome),
    );
  }

  /**
   * Runs `work(client)` inside `BEGIN … COMMIT` on one pooled connection, then appends
   * `envelopes(result)` through the same connection, and commits both or neither. Errors thrown
   * by `work` are rethrown unchanged after the rollback, except when the connection died
   * meanwhile: then the call fails with `STORE_UNAVAILABLE` (the connection is discarded, never
   * handed back to the pool). Other processes are notified after the commit.
   *
   * Error codes: those of `append`.
   */
  async transact<T>(
    work: (tx: unknown) => T | Promise<T>,
    envelopes: (result: T) => readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<{ result: T; stored: StoredEvent[] }> {
    this.assertWritable('transact');
    if (this.schemaVersion < startedBySchemaVersion)
      await this.requireSchema(startedBySchemaVersion);
    const checkedOut = await checkOut(this.pool).catch((error: unknown) => {
      throw this.mapError(error, 'transact');
    });
    const { client } = checkedOut;
    let failedInWork = false;
    let broken = false;
    let prepared: PreparedAppend | undefined;
    try {
      this.count('begin');
      await client.query(beginReadCommitted);
      let result: T;
      try {
        result = await work(client);
      } catch (error) {
        failedInWork = true;
        throw error;
      }
      prepared = prepareAppend(envelopes(result), guard, this.options.clock.now());
      const stored = await this.writePrepared(prepared, async (statement, values) => {
        this.count(statement.name);
        return (await client.query({ name: statement.name, text: statement.text, values }))
          .rows as AppendedRow[];
      });
      if (prepared.notify !== undefined) await this.notifyIn(client, prepared.notify);
      this.count('commit');
      await client.query('COMMIT');
      this.appended(stored);
      return { result, stored };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      // A standby's answer (25006) is the wrong server, not a failed append: drop the connection.
      broken ||= isWrongServer(error);
      // The connection died under the transaction (while `work` ran, or in our own statements):
      // nothing committed, unless a COMMIT whose answer was lost did; the log tells which.
      if (broken || checkedOut.lost !== undefined) {
        throw this.mapError(checkedOut.lost ?? error, 'transact');
      }
      if (failedInWork || isLoomError(error)) throw error;
      if (prepared !== undefined) {
        throw await this.appendFailure(error, prepared.executionId, prepared.firstSequence);
      }
      throw this.mapError(error, 'transact');
    } finally {
      checkedOut.release(broken);
    }
  }

  /** One execution's events by sequence. Throws `INVALID_ARGUMENT`, `SCHEMA_NOT_MIGRATED`, `STORE_*`. */
  async read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    this.assertOpen();
    const { fromSequence, limit } = readOptions(options);
    const id = checkExecutionId(executionId);
    await this.requireSchema();
    const rows = await this.run<PgEventRow>(this.sql.read, [id, fromSequence, limit], 'read');
    const last = rows[rows.length - 1];
    if (last !== undefined) this.tails.remember(id, Number(last.sequence), last.hash);
    return rows.map((row) => rowToEvent(rowFromPg(row)));
  }

  /**
   * Events of all executions in commit-safe order: only rows whose transaction is older than
   * every transaction still running, ordered by (transaction id, position). `afterPosition` must
   * be 0 or the position of a stored event (else `INVALID_ARGUMENT`); positions are unique but
   * NOT increasing along this order, so resume from the last event you processed, never from
   * a larger number. When committed rows are held back behind an open transaction, this store's
   * global subscriptions are woken again (25 ms, doubling to 1 s) until a read finds none: no
   * extra statement, the same one says so.
   */
  async readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    this.assertOpen();
    const { afterPosition, limit } = readAllOptions(options);
    await this.requireSchema();
    const rows =
      afterPosition === 0
        ? await this.run<PgReadAllRow>(this.sql.readAllFromStart, [limit], 'readAll')
        : await this.run<PgReadAllRow>(this.sql.readAllAfter, [afterPosition, limit], 'readAll');
    if (rows[0]?.cursor_found !== true) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `afterPosition ${afterPosition} is not the position of a stored event: pass 0, or the ` +
          'position of the last event readAll or a subscription gave you',
        { path: 'afterPosition', actual: afterPosition },
      );
    }
    // Rows held back behind an open transaction: no notification is left to announce them once
    // it ends, so the global subscriptions are woken again until none is held back.
    this.notifications.readAllHeldBack(rows[0].held_back);
    const events: StoredEvent[] = [];
    for (const row of rows) {
      if (row.execution_id !== null) events.push(rowToEvent(rowFromPg(row as PgEventRow)));
    }
    return events;
  }

  /**
   * Executions from the execution index matching every filter given, by id (see
   * {@link EventStore}): one statement. Throws `INVALID_ARGUMENT`, `SCHEMA_NOT_MIGRATED` (below
   * schema version 8), `STORE_*`.
   */
  async findExecutions(options: FindExecutionsOptions): Promise<ExecutionSummary[]> {
    this.assertOpen();
    const filter = findExecutionsOptions(options);
    await this.requireSchema(startedBySchemaVersion);
    const { statement, values } = findExecutionsQuery(quoteIdent(this.schema), this.schema, filter);
    const rows = await this.run<PgExecutionRow>(statement, values, 'findExecutions');
    return rows.map(summaryFromPg);
  }

  /**
   * Puts a signal in the execution's inbox, records its id on the index row (what a suspension's
   * `wakeOnSignalsAfter` is compared with, ADR 0033) and, when the execution is suspended, sets its
   * `wake_at_ms` to now so `claimDue` picks it up: one statement, so one round trip unless
   * another sender to the same execution got in first (then it is sent again, at most
   * `sendSignalAttemptsMax` times; see send-signal-statement.ts). A repeated idempotency key
   * returns the first signal's id with `duplicate: true`.
   *
   * Throws `EXECUTION_NOT_FOUND`, `EXECUTION_SETTLED`, `INVALID_ENVELOPE`, `PAYLOAD_NOT_JSON`,
   * `LIMIT_EXCEEDED`, `STORE_READ_ONLY`, `SCHEMA_NOT_MIGRATED` (below schema version 7),
   * `STORE_BUSY` (out of attempts), `STORE_*`.
   */
  async sendSignal(input: SignalInput): Promise<{ signalId: number; duplicate: boolean }> {
    this.assertWritable('send a signal');
    const signal = prepareSignal(input, this.options.clock.now());
    await this.requireSchema(signalMarkSchemaVersion);
    const values = sendSignalValues(signal);
    for (let attempt = 1; attempt <= sendSignalAttemptsMax; attempt++) {
      const rows = await this.run<PgSentSignalRow>(this.sql.sendSignal, values, 'sendSignal');
      const sent = signalSent(rows[0], signal.executionId);
      if (sent !== undefined) return sent;
    }
    throw new LoomError(
      ErrorCode.STORE_BUSY,
      `sendSignal to execution ${signal.executionId} lost ${sendSignalAttemptsMax} times in a ` +
        'row to other senders to the same execution: its inbox is being flooded; retry later',
      { executionId: signal.executionId, operation: 'sendSignal', limit: 'sendSignalAttemptsMax' },
    );
  }

  /**
   * An append's `notify`, inside its transaction: `sendSignal`'s statement on the transaction's
   * connection (sent again while it races another sender, as `sendSignal` is), a missing or
   * settled target skipped. Throws `STORE_BUSY` (out of attempts) and the connection's errors.
   */
  private async notifyIn(client: ClientBase, signal: PreparedSignal): Promise<void> {
    const values = sendSignalValues(signal);
    const statement = this.sql.sendSignal;
    for (let attempt = 1; attempt <= sendSignalAttemptsMax; attempt++) {
      this.count(statement.name);
      const { rows } = await client.query({ name: statement.name, text: statement.text, values });
      const outcome = (rows[0] as PgSentSignalRow | undefined)?.outcome;
      if (outcome !== 'raced') return;
    }
    throw new LoomError(
      ErrorCode.STORE_BUSY,
      `the signal to execution ${signal.executionId} carried by an append lost ` +
        `${sendSignalAttemptsMax} times in a row to other senders: its inbox is being flooded; retry later`,
      { executionId: signal.executionId, operation: 'append', limit: 'sendSignalAttemptsMax' },
    );
  }

  /**
   * The execution's inbox in arrival order, payloads decoded. Throws `INVALID_ARGUMENT`,
   * `SCHEMA_NOT_MIGRATED` (below schema version 3), `STORE_*`.
   */
  async readSignals(executionId: string, options?: ReadSignalsOptions): Promise<StoredSignal[]> {
    this.assertOpen();
    const { afterSignalId, limit } = readSignalsOptions(options);
    const id = checkExecutionId(executionId);
    await this.requireSchema(signalsSchemaVersion);
    const rows = await this.run<PgSignalRow>(
      this.sql.readSignals,
      [id, afterSignalId, limit],
      'readSignals',
    );
    return rows.map(signalFromPg);
  }

  /**
   * Claims up to `limit` suspended executions due at `nowMs` (oldest wake first), flipping them
   * to `running` in one statement; stores on other nodes claiming at once skip the rows this one
   * holds, so each execution is claimed exactly once (see claim-due-statement.ts). Throws
   * `INVALID_ARGUMENT`, `STORE_READ_ONLY`, `SCHEMA_NOT_MIGRATED` (below schema version 3),
   * `STORE_*`.
   */
  async claimDue(nowMs: number, limit: number, options?: ClaimDueOptions): Promise<string[]> {
    this.assertWritable('claim due executions');
    const flows = checkClaimDue(nowMs, limit, options);
    // The filter reads the index's flow columns (schema version 5).
    await this.requireSchema(flows === undefined ? signalsSchemaVersion : indexSchemaVersion);
    const rows = await this.run<{ execution_id: string }>(
      this.sql.claimDue,
      [
        this.options.clock.now(),
        nowMs,
        limit,
        flows === undefined ? null : flows.map((flow) => flow.name),
        flows === undefined ? null : flows.map((flow) => flow.version),
        claimedByOf(options),
      ],
      'claimDue',
    );
    return rows.map((row) => row.execution_id);
  }

  /**
   * Gives back claimed executions still `running`: flipped to `suspended`, due at `nowMs`, in one
   * statement (see claim-due-statement.ts). Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`,
   * `LIMIT_EXCEEDED`, `STORE_READ_ONLY`, `SCHEMA_NOT_MIGRATED` (below schema version 3),
   * `STORE_*`.
   */
  async unclaimDue(executionIds: readonly string[], nowMs: number): Promise<string[]> {
    this.assertWritable('give back claimed executions');
    const ids = checkUnclaimDue(executionIds, nowMs);
    if (ids.length === 0) return [];
    await this.requireSchema(signalsSchemaVersion);
    const rows = await this.run<{ execution_id: string }>(
      this.sql.unclaimDue,
      [this.options.clock.now(), nowMs, ids],
      'unclaimDue',
    );
    return rows.map((row) => row.execution_id);
  }

  /**
   * Removes settled executions that ended before `options.endedBeforeMs`, with every row keyed by
   * their ids, in one statement (see prune-statement.ts), and forgets their cached tails. Throws
   * `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED` (below schema version 9), `STORE_*`.
   */
  async prune(options: PruneOptions): Promise<PrunedExecution[]> {
    this.assertWritable('prune executions');
    const { endedBeforeMs, executionIds, limit } = checkPrune(options);
    if (executionIds?.length === 0) return [];
    await this.requireSchema(pruneSchemaVersion);
    const rows = await this.run<{ execution_id: string; events: string; last_hash: string }>(
      this.sql.prune,
      [endedBeforeMs, executionIds ?? null, limit],
      'prune',
    );
    return rows.map((row) => {
      this.tails.forget(row.execution_id);
      return { executionId: row.execution_id, events: Number(row.events), lastHash: row.last_hash };
    });
  }

  /**
   * Delivers events as they are appended by any process on this schema: LISTENs (on the
   * store's one listener connection) to all buckets for a global subscription, to the
   * execution's bucket otherwise, and polls every `pollIntervalMs` as a safety net. A global
   * subscription whose read finds rows held back by an open transaction is woken again until
   * they are delivered, poll or not.
   */
  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    this.assertOpen();
    return this.subscriptions.subscribe(options, handler);
  }

  /** Re-reads the execution's raw rows (in pages) and recomputes its hash chain. */
  async verify(executionId: string): Promise<VerifyResult> {
    this.assertOpen();
    const id = checkExecutionId(executionId);
    await this.requireSchema();
    const rows: StoredRow[] = [];
    let fromSequence = 0;
    for (;;) {
      const page = await this.run<PgEventRow>(
        this.sql.read,
        [id, fromSequence, Limits.readLimitMax],
        'verify',
      );
      for (const row of page) rows.push(rowFromPg(row));
      const last = page[page.length - 1];
      if (last === undefined || page.length < Limits.readLimitMax) break;
      fromSequence = Number(last.sequence) + 1;
    }
    return verifyRows(id, rows);
  }

  /** Closes subscriptions and the listener connection, and ends the pool if the store created it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.subscriptions.closeAll();
    await this.notifications.close();
    if (this.ownsPool) await this.pool.end();
  }

  /** Round trips and notifications so far (live counters; tests assert round trips per call). */
  get stats(): PostgresEventStoreStats {
    const sent = this.notifications.sent;
    return {
      roundTrips: this.roundTrips,
      notifications: this.notifications.received,
      notifyStatements: sent.statements,
      notifyFailures: sent.failures,
      pollStatements:
        this.notifications instanceof PolledAppendFeed ? this.notifications.polls.statements : 0,
    };
  }

  /** Test hook: whether `appendBatch` of one request takes the plain append (default true). */
  [batchOfOneHook](plainPath: boolean): void {
    this.batchOfOnePlain = plainPath;
  }

  /**
   * Test hook (`listeningChannels`, `listenerProcessId` of `/testing`): the channels the listener
   * connection LISTENs to, as the server reports them, and its server pid (to kill it).
   */
  [listenerHook](): { channels(): Promise<string[]>; processId: number | undefined } {
    const { notifications } = this;
    return {
      channels: () => notifications.listeningChannels(),
      processId: notifications.listenerProcessId,
    };
  }

  /**
   * The one tail of `append` and `transact`, after preparing: chains the hashes (from the tail
   * cache, or one read), sends the append statement through `query` (the pool, or the
   * transaction's connection), turns "no rows" into `FENCE_STALE` and sets the positions
   * Postgres assigned. The caller reports success with {@link appended} once it is durable.
   */
  private async writePrepared(
    prepared: PreparedAppend,
    query: (statement: PgStatement, values: unknown[]) => Promise<AppendedRow[]>,
  ): Promise<StoredEvent[]> {
    const { executionId, firstSequence } = prepared;
    const prevHash = firstSequence === 0 ? null : await this.hashBefore(executionId, firstSequence);
    const stored = chainEvents(prepared, prevHash);
    const shape =
      (prepared.fenceEpoch === undefined ? 0 : 1) + (prepared.status === undefined ? 0 : 2);
    const rows = await query(this.sql.append[shape] as PgStatement, appendValues(prepared, stored));
    if (rows.length === 0) throw await this.fenceRefused(prepared);
    if (rows.length !== stored.length) {
      throw new Error(`invariant: append inserted ${rows.length} of ${stored.length} rows`);
    }
    for (const row of rows) {
      (stored[Number(row.sequence) - firstSequence] as StoredEvent).position = Number(row.position);
    }
    return stored;
  }

  /** A read elsewhere of this store's table (a combined snapshot read): remember its tip. */
  [rememberTailHook](executionId: string, sequence: number, hash: string): void {
    this.tails.remember(executionId, sequence, hash);
  }

  /** A committed append: its tip goes in the tail cache, and local subscribers wake. */
  private appended(stored: readonly StoredEvent[]): void {
    const last = stored[stored.length - 1] as StoredEvent;
    this.tails.remember(last.executionId, last.sequence, last.hash);
    this.notifications.appended(last.executionId);
  }

  private async hashBefore(executionId: string, firstSequence: number): Promise<string> {
    const cached = this.tails.hashAt(executionId, firstSequence - 1);
    if (cached !== undefined) return cached;
    const rows = await this.run<{ hash: string }>(
      this.sql.hashAt,
      [executionId, firstSequence - 1],
      'append',
    );
    const hash = rows[0]?.hash;
    if (hash === undefined) {
      throw sequenceConflict(executionId, await this.nextSequence(executionId), firstSequence);
    }
    this.tails.remember(executionId, firstSequence - 1, hash);
    return hash;
  }

  private async appendFailure(
    error: unknown,
    executionId: string,
    firstSequence: number,
  ): Promise<LoomError> {
    if (classifyPgError(error) !== 'unique_violation') return this.mapError(error, 'append');
    if (firstSequence === 0) return alreadyStarted(executionId);
    return sequenceConflict(executionId, await this.nextSequence(executionId), firstSequence);
  }

  private async fenceRefused(prepared: PreparedAppend): Promise<LoomError> {
    if (prepared.fenceEpoch === undefined) {
      throw new Error('invariant: an unfenced append inserted no rows');
    }
    const current = await this.currentEpoch(prepared.executionId);
    return fenceStale(prepared.executionId, current, prepared.fenceEpoch);
  }

  private async nextSequence(executionId: string): Promise<number> {
    const rows = await this.run<{ next: string }>(this.sql.nextSequence, [executionId], 'append');
    return Number(rows[0]?.next ?? 0);
  }

  private async currentEpoch(executionId: string): Promise<number> {
    await this.requireSchema();
    const rows = await this.run<{ epoch: string }>(
      this.sql.fenceCurrent,
      [executionId],
      'fences.current',
    );
    return Number(rows[0]?.epoch ?? 0);
  }

  /** Checks the schema version until it is known to be at least `needed` (free once it is). */
  private async requireSchema(needed = requiredSchemaVersion): Promise<void> {
    if (this.schemaVersion >= needed) return;
    const version = await this.inspectSchema();
    if (this.schemaVersion < needed) {
      throw schemaNotMigrated(this.schema, version, latestSchemaVersion);
    }
  }

  private async inspectSchema(): Promise<number | null> {
    this.count('schema-version');
    let version: number | null;
    try {
      version = await readSchemaVersion(this.pool, this.schema);
    } catch (error) {
      throw this.mapError(error, 'schema version check');
    }
    if (version !== null && version > latestSchemaVersion) {
      throw schemaTooNew(this.schema, version, latestSchemaVersion);
    }
    this.schemaVersion = version ?? 0;
    return version;
  }

  /** One round trip, driver errors mapped to LoomErrors. */
  private async run<R>(statement: PgStatement, values: unknown[], operation: string): Promise<R[]> {
    try {
      return await this.send<R>(statement, values);
    } catch (error) {
      throw this.mapError(error, operation);
    }
  }

  /** One round trip, driver errors raw (append needs to see 23505). */
  private async send<R>(statement: PgStatement, values: unknown[]): Promise<R[]> {
    this.count(statement.name);
    const result = await this.pool.query({ name: statement.name, text: statement.text, values });
    return result.rows as R[];
  }

  private count(statementName: string): void {
    this.roundTrips++;
    this.options.onQuery?.(statementName);
  }

  private mapError(error: unknown, operation: string): LoomError {
    const mapped = toLoomError(error, {
      schema: this.schema,
      operation,
      latestVersion: latestSchemaVersion,
    });
    // The schema was dropped under us: check again (and fail fast) on the next call.
    if (mapped.code === ErrorCode.SCHEMA_NOT_MIGRATED) this.schemaVersion = 0;
    return mapped;
  }

  private assertOpen(): void {
    if (this.closed) throw storeClosed(this.backend);
  }

  private assertWritable(operation: string): void {
    this.assertOpen();
    if (this.readOnly) throw storeReadOnly(this.backend, operation);
  }

  /**
   * The lease store in this store's schema, on its pool, with its clock, made once: what a
   * runtime given no `leases` uses. Its schema version is checked by its first call. Undefined
   * on a read-only store.
   */
  defaultLeaseStore(): LeaseStore | undefined {
    if (this.readOnly) return undefined;
    this.leases ??= PostgresLeaseStore.onPool(this.pool, this.schema, {
      clock: this.options.clock,
    });
    return this.leases;
  }

  /**
   * The pg pool this store queries through, so `PostgresLeaseStore` and `PostgresSnapshotStore`
   * can share it (`{ pool: store.connectionPool, schema: store.schema }`). A pool the store
   * created is ended by {@link PostgresEventStore.close}: close the sharing stores first.
   */
  get connectionPool(): Pool {
    return this.pool;
  }
}
