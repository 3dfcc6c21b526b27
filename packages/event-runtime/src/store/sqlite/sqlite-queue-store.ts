import type Database from 'better-sqlite3';
import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { ErrorCode, isLoomError, LoomError } from '../../errors.js';
import { checkLeaseOwner, leaseExpiry } from '../../internal/lease-input.js';
import {
  type ClaimCandidate,
  checkPartitionKey,
  checkQueueBatch,
  checkQueueItemId,
  checkQueueName,
  checkQueueOutcome,
  claimBudget,
  listQueuesOptions,
  pickClaims,
  prepareClaim,
  prepareEnqueue,
} from '../../internal/queue-input.js';
import { byClaimOrder, type QueueItemRow, queueItemFromRow } from '../../internal/queue-row.js';
import { Limits } from '../../limits.js';
import type {
  ClaimOptions,
  EnqueueInput,
  EnqueueResult,
  ListQueuesOptions,
  QueueItem,
  QueueItemOutcome,
  QueueStats,
  QueueStore,
} from '../../queue-store.js';
import { mapSqliteError } from './sqlite-errors.js';
import {
  candidatesSql,
  completeSql,
  debounceSql,
  existingSql,
  getSql,
  idempotentSql,
  insertSql,
  renewSql,
  runningSql,
  startedSql,
  statsSql,
  takeSql,
  unfinishedOfPartitionSql,
} from './sqlite-queue-statements.js';
import { SqliteTableAccess } from './sqlite-table-access.js';

/** Options of {@link SqliteQueueStore}. */
export interface SqliteQueueStoreOptions {
  /** Judges claim expiry and rate windows. Default: the wall clock. */
  clock?: Clock;
  /** Refuse writes with `STORE_READ_ONLY`. Always true on a read-only handle. Default false. */
  readOnly?: boolean;
}

function prepareStatements(db: Database.Database) {
  return {
    insert: db.prepare(insertSql).pluck(),
    existing: db.prepare(existingSql).pluck(),
    idempotent: db.prepare(idempotentSql).pluck(),
    debounce: db.prepare(debounceSql).pluck(),
    running: db.prepare<[string, number], { partition_key: string | null; n: number }>(runningSql),
    started: db.prepare<[string, number], number>(startedSql).pluck(),
    candidates: db.prepare<
      [
        {
          queue: string;
          nowMs: number;
          flows: string | null;
          limit: number;
          partitionMax: number | null;
        },
      ],
      ClaimCandidate
    >(candidatesSql),
    take: db.prepare<[Record<string, unknown>], QueueItemRow>(takeSql),
    renew: db.prepare(renewSql).pluck(),
    complete: db.prepare(completeSql),
    get: db.prepare<[string, string], QueueItemRow>(getSql),
    unfinished: db.prepare<[string, string, number], QueueItemRow>(unfinishedOfPartitionSql),
    stats: db.prepare<[Record<string, unknown>], QueueStats>(statsSql('queue = @queue')),
    list: db.prepare<[Record<string, unknown>], QueueStats>(statsSql('queue > @queue')),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/**
 * Queues in the SQLite file of a `SqliteEventStore`, on its connection (pass
 * `eventStore.database`). Every call is one transaction; `claim` is one IMMEDIATE transaction
 * (counts, candidate scan, update), so SQLite's single writer makes the global limits exact
 * across connections and processes. The table comes from migration 4 ('queues').
 *
 * Error codes: `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, `SCHEMA_NOT_MIGRATED`,
 * `SCHEMA_TOO_NEW`, `STORE_READ_ONLY`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`,
 * `STORE_FAILURE`.
 *
 * @example
 * const events = SqliteEventStore.open({ path: 'loom.db', migrate: true });
 * const queues = new SqliteQueueStore(events.database);
 * await queues.enqueue({ queue: 'emails', flow: 'send-email', input: { to: 'ada@example.com' }, priority: 5 });
 * const items = await queues.claim('emails', { owner: 'node-a', limit: 10, concurrencyMax: 5, claimTtlMs: 30_000 });
 */
export class SqliteQueueStore implements QueueStore {
  readonly backend = 'sqlite';
  private readonly tables: SqliteTableAccess<Statements>;

  /** True when opened read-only (or on a read-only handle): writes fail with `STORE_READ_ONLY`. */
  get readOnly(): boolean {
    return this.tables.readOnly;
  }
  private readonly clock: Clock;

  /** Wraps an open better-sqlite3 handle; touches nothing until the first call. Never closes it. */
  constructor(database: Database.Database, options: SqliteQueueStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.tables = new SqliteTableAccess(
      database,
      'queue',
      'queue-debounce',
      prepareStatements,
      options.readOnly,
    );
  }

  /** See {@link QueueStore.enqueue}: insert and duplicate lookup in one transaction. */
  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    this.tables.assertWritable('enqueue');
    const item = prepareEnqueue(input);
    const nowMs = this.clock.now();
    const s = this.tables.ready();
    return this.transact('enqueue', () => {
      if (item.idempotencyKey !== null) {
        const open = s.idempotent.get({ ...item, nowMs }) as string | undefined;
        if (open !== undefined) return { itemId: open, duplicate: true };
      }
      if (item.debounceKey !== null) {
        // An item id already taken answers itself, as on the other backends.
        const taken = s.existing.get(item) as string | undefined;
        if (taken !== undefined) return { itemId: taken, duplicate: true };
        const pending = s.debounce.get({ ...item, nowMs }) as string | undefined;
        if (pending !== undefined) return { itemId: pending, duplicate: true };
      }
      const inserted = s.insert.get({ ...item, nowMs }) as string | undefined;
      if (inserted !== undefined) return { itemId: inserted, duplicate: false };
      const existing = s.existing.get(item) as string | undefined;
      if (existing === undefined) {
        throw new LoomError(
          ErrorCode.STORE_FAILURE,
          `enqueue of ${item.itemId} collided with nothing`,
        );
      }
      return { itemId: existing, duplicate: true };
    });
  }

  /** See {@link QueueStore.claim}: one IMMEDIATE transaction. */
  async claim(queue: string, options: ClaimOptions): Promise<QueueItem[]> {
    this.tables.assertWritable('claim');
    const claim = prepareClaim(queue, options, this.clock.now());
    const s = this.tables.ready();
    const rows = this.transact('claim', () => {
      let running = 0;
      const runningByPartition = new Map<string, number>();
      for (const row of s.running.all(claim.queue, claim.nowMs)) {
        running += row.n;
        if (row.partition_key !== null) runningByPartition.set(row.partition_key, row.n);
      }
      const started =
        claim.windowStartMs === null ? 0 : (s.started.get(claim.queue, claim.windowStartMs) ?? 0);
      const budget = claimBudget(claim, running, started);
      if (budget === 0) return [];
      const candidates = s.candidates.all({
        queue: claim.queue,
        nowMs: claim.nowMs,
        flows:
          claim.flows === undefined
            ? null
            : JSON.stringify(claim.flows.map((flow) => [flow.name, flow.version])),
        limit: Limits.queueClaimScanMax,
        partitionMax: claim.partitionConcurrencyMax,
      });
      const ids = pickClaims(candidates, budget, runningByPartition, claim.partitionConcurrencyMax);
      if (ids.length === 0) return [];
      return s.take.all({
        queue: claim.queue,
        ids: JSON.stringify(ids),
        owner: claim.owner,
        expiresAtMs: claim.claimExpiresAtMs,
        nowMs: claim.nowMs,
      });
    });
    return byClaimOrder(rows).map(queueItemFromRow);
  }

  /** See {@link QueueStore.renew}: one statement. */
  async renew(
    queue: string,
    owner: string,
    itemIds: readonly string[],
    claimTtlMs: number,
  ): Promise<string[]> {
    this.tables.assertWritable('renew');
    const name = checkQueueName(queue);
    checkLeaseOwner(owner);
    const nowMs = this.clock.now();
    const expiresAtMs = leaseExpiry(claimTtlMs, nowMs);
    const ids = checkQueueBatch(itemIds, 'renew');
    if (ids.length === 0) return [];
    const s = this.tables.ready();
    const renewed = new Set(
      this.transact('renew', () =>
        s.renew.all({ queue: name, ids: JSON.stringify(ids), owner, expiresAtMs, nowMs }),
      ) as string[],
    );
    return ids.filter((id) => !renewed.has(id));
  }

  /** See {@link QueueStore.complete}: one statement. */
  async complete(
    queue: string,
    itemIds: readonly string[],
    outcome?: QueueItemOutcome,
  ): Promise<void> {
    this.tables.assertWritable('complete');
    const name = checkQueueName(queue);
    const ids = checkQueueBatch(itemIds, 'complete');
    const ended = checkQueueOutcome(outcome);
    if (ids.length === 0) return;
    const s = this.tables.ready();
    const nowMs = this.clock.now();
    this.transact('complete', () =>
      s.complete.run({ queue: name, ids: JSON.stringify(ids), nowMs, outcome: ended }),
    );
  }

  /** See {@link QueueStore.queueStats}: one query. */
  async queueStats(queue: string): Promise<QueueStats> {
    this.tables.assertOpen();
    const name = checkQueueName(queue);
    const s = this.tables.ready();
    let row: QueueStats | undefined;
    try {
      row = s.stats.get({ queue: name, nowMs: this.clock.now(), limit: 1 });
    } catch (error) {
      throw mapSqliteError(error, 'queueStats');
    }
    return row ?? { queue: name, depth: 0, claimed: 0, completed: 0, failed: 0, cancelled: 0 };
  }

  /** See {@link QueueStore.listQueues}: one query per page. */
  async listQueues(options?: ListQueuesOptions): Promise<QueueStats[]> {
    this.tables.assertOpen();
    const { afterQueue, limit } = listQueuesOptions(options);
    const s = this.tables.ready();
    try {
      return s.list.all({ queue: afterQueue, nowMs: this.clock.now(), limit });
    } catch (error) {
      throw mapSqliteError(error, 'listQueues');
    }
  }

  /** See {@link QueueStore.get}. */
  async get(queue: string, itemId: string): Promise<QueueItem | undefined> {
    this.tables.assertOpen();
    const name = checkQueueName(queue);
    const id = checkQueueItemId(itemId);
    const s = this.tables.ready();
    let row: QueueItemRow | undefined;
    try {
      row = s.get.get(name, id);
    } catch (error) {
      throw mapSqliteError(error, 'get queue item');
    }
    return row === undefined ? undefined : queueItemFromRow(row);
  }

  /** See {@link QueueStore.unfinishedOfPartition}: one statement. */
  async unfinishedOfPartition(queue: string, partitionKey: string): Promise<QueueItem[]> {
    this.tables.assertOpen();
    const name = checkQueueName(queue);
    const key = checkPartitionKey(partitionKey);
    const s = this.tables.ready();
    try {
      return s.unfinished.all(name, key, Limits.queueBatchMax).map(queueItemFromRow);
    } catch (error) {
      throw mapSqliteError(error, 'read a partition');
    }
  }

  /** Further calls fail with `STORE_CLOSED`. Leaves the database handle open. Idempotent. */
  async close(): Promise<void> {
    this.tables.close();
  }

  /** Runs `work` in one IMMEDIATE transaction (the write lock first), mapping driver errors. */
  private transact<T>(operation: string, work: () => T): T {
    try {
      return this.tables.database.transaction(work).immediate();
    } catch (error) {
      if (isLoomError(error)) throw error;
      throw mapSqliteError(error, operation);
    }
  }
}
