import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { checkLeaseOwner, leaseExpiry } from '../../internal/lease-input.js';
import {
  checkPartitionKey,
  checkQueueBatch,
  checkQueueItemId,
  checkQueueName,
  checkQueueOutcome,
  listQueuesOptions,
  type PreparedEnqueue,
  prepareClaim,
  prepareEnqueue,
} from '../../internal/queue-input.js';
import { byClaimOrder, type QueueItemRow, queueItemFromRow } from '../../internal/queue-row.js';
import { storeReadOnly } from '../../internal/store-errors.js';
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
import { queueDebounceMigration } from './migrations/0013-queue-debounce.js';
import { type PgConnectionOptions, resolvePool } from './pg-pool.js';
import { PgStoreHandle } from './pg-store-handle.js';
import { type QueueStatements, queueStatements } from './queue-statements.js';
import { checkSchemaName, quoteIdent } from './schema-name.js';

/** How to open a {@link PostgresQueueStore}. */
export interface PostgresQueueStoreOptions extends PgConnectionOptions {
  /** The Postgres schema holding Loom's tables (validated identifier). Default `loom`. */
  schema?: string;
  /** Judges claim expiry and rate windows (passed as parameters, never the server's `now()`). */
  clock?: Clock;
  /** Refuse enqueue, claim, renew and complete with `STORE_READ_ONLY`. Default false. */
  readOnly?: boolean;
}

/** Attempts of an enqueue whose duplicate finished between the insert and the lookup. */
const enqueueAttemptsMax = 3;

/**
 * Queues in Postgres (`<schema>.queues`, `<schema>.queue_items`, from migration 4
 * '0004-queues'; an item's own partition limit from '0011-queue-partition-limits', its throttle from
 * '0012-queue-flow-control', its debounce from '0013-queue-debounce'). A claim is one transaction of two named statements: lock the queue's row in
 * `queues` (`FOR UPDATE`), then one statement that counts live claims and recent starts, picks
 * candidates `FOR UPDATE SKIP LOCKED` best first and claims them (see queue-statements.ts). The
 * lock row makes the global limits exact across processes; claims of different queues never
 * wait on each other. Enqueue, renew and complete are one statement each.
 *
 * To share one pool with the event store, pass `pool` (`eventStore.connectionPool`); the store
 * then never ends it.
 *
 * Error codes: `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, `INVALID_ENVELOPE` (NUL
 * in a string), `SCHEMA_NOT_MIGRATED`, `SCHEMA_TOO_NEW`, `STORE_READ_ONLY`, `STORE_BUSY`,
 * `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_FAILURE`.
 *
 * @example
 * const events = await PostgresEventStore.open({ connectionString: process.env.DATABASE_URL });
 * const queues = await PostgresQueueStore.open({ pool: events.connectionPool, schema: events.schema });
 * await queues.enqueue({ queue: 'emails', flow: 'send-email', input: { to: 'ada@example.com' } });
 * const items = await queues.claim('emails', { owner: 'node-a', limit: 10, concurrencyMax: 5, claimTtlMs: 30_000 });
 */
export class PostgresQueueStore implements QueueStore {
  readonly backend = 'postgres';
  readonly schema: string;
  readonly readOnly: boolean;
  private readonly handle: PgStoreHandle;
  private readonly clock: Clock;
  private readonly sql: QueueStatements;

  /**
   * Opens a queue store on a schema and checks its version (one round trip). An absent or older
   * schema is fine here: calls then fail with `SCHEMA_NOT_MIGRATED` until someone migrates it.
   * Throws `INVALID_ARGUMENT`, `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`.
   *
   * @example
   * const queues = await PostgresQueueStore.open({ connectionString: 'postgres://localhost/app' });
   */
  static async open(options: PostgresQueueStoreOptions = {}): Promise<PostgresQueueStore> {
    const schema = checkSchemaName(options.schema ?? 'loom');
    const handle = new PgStoreHandle(resolvePool(options), {
      schema,
      requiredVersion: queueDebounceMigration.version,
      store: 'queue store',
    });
    try {
      await handle.inspectSchema();
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new PostgresQueueStore(handle, options);
  }

  private constructor(handle: PgStoreHandle, options: PostgresQueueStoreOptions) {
    this.handle = handle;
    this.schema = handle.schema;
    this.clock = options.clock ?? systemClock;
    this.readOnly = options.readOnly ?? false;
    this.sql = queueStatements(quoteIdent(handle.schema), handle.schema);
  }

  /** See {@link QueueStore.enqueue}: one statement, plus a lookup for a duplicate. */
  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    this.assertWritable('enqueue');
    const item = prepareEnqueue(input);
    if (item.idempotencyKey !== null) return this.enqueueIdempotent(item);
    if (item.debounceKey !== null) return this.enqueueDebounced(item);
    for (let attempt = 1; ; attempt++) {
      const inserted = await this.handle.run<{ item_id: string }>(
        this.sql.enqueue,
        [...this.itemValues(item, this.clock.now()), item.idempotencyKey, item.idempotencyWindowMs],
        'enqueue',
      );
      if (inserted[0] !== undefined) return { itemId: inserted[0].item_id, duplicate: false };
      const existing = await this.handle.run<{ item_id: string }>(
        this.sql.existing,
        [item.queue, item.itemId, item.dedupeKey],
        'enqueue: find duplicate',
      );
      if (existing[0] !== undefined) return { itemId: existing[0].item_id, duplicate: true };
      // The unfinished duplicate finished in between: its dedupe key is free again.
      if (attempt >= enqueueAttemptsMax) {
        throw new LoomError(
          ErrorCode.STORE_BUSY,
          `enqueue of ${item.itemId} into ${item.queue} kept colliding with items finishing meanwhile; retry`,
          { operation: 'enqueue' },
        );
      }
    }
  }

  /** The values every enqueue statement starts with ($1–$13: the item, enqueued at `nowMs`). */
  private itemValues(item: PreparedEnqueue, nowMs: number): unknown[] {
    return [
      item.queue,
      item.itemId,
      item.flow,
      item.version,
      item.inputText,
      item.priority,
      item.dedupeKey,
      item.partitionKey,
      nowMs,
      item.partitionConcurrencyMax,
      item.throttleKey,
      item.throttleCount,
      item.throttleWindowMs,
    ];
  }

  /**
   * An enqueue with a dedupe window: one transaction that takes the key's advisory lock, looks
   * for an open window of the key, and inserts only when there is none (ADR 0059).
   */
  private async enqueueIdempotent(item: PreparedEnqueue): Promise<EnqueueResult> {
    const nowMs = this.clock.now();
    return this.handle.transaction('enqueue', async (query) => {
      await query(this.sql.idempotencyLock, [item.queue, item.idempotencyKey]);
      const open = await query<{ item_id: string }>(this.sql.idempotent, [
        item.queue,
        item.idempotencyKey,
        nowMs,
      ]);
      if (open[0] !== undefined) return { itemId: open[0].item_id, duplicate: true };
      const inserted = await query<{ item_id: string }>(this.sql.enqueue, [
        ...this.itemValues(item, nowMs),
        item.idempotencyKey,
        item.idempotencyWindowMs,
      ]);
      if (inserted[0] !== undefined) return { itemId: inserted[0].item_id, duplicate: false };
      const existing = await query<{ item_id: string }>(this.sql.existing, [
        item.queue,
        item.itemId,
        item.dedupeKey,
      ]);
      if (existing[0] !== undefined) return { itemId: existing[0].item_id, duplicate: true };
      throw new LoomError(
        ErrorCode.STORE_BUSY,
        `enqueue of ${item.itemId} into ${item.queue} collided with an item finishing meanwhile; retry`,
        { operation: 'enqueue' },
      );
    });
  }

  /**
   * A debounced enqueue: one statement that inserts the item or, when its key has a pending item,
   * gives that item this input and a later due time (ADR 0059; see queue-statements.ts). Only an
   * item id already taken (a caller's own id) needs a second look.
   */
  private async enqueueDebounced(item: PreparedEnqueue): Promise<EnqueueResult> {
    const written = await this.handle.run<{ item_id: string; inserted: boolean }>(
      this.sql.debounce,
      [
        ...this.itemValues(item, this.clock.now()),
        item.debounceKey,
        item.debouncePeriodMs,
        item.debounceMaxWaitMs,
      ],
      'enqueue',
    );
    const row = written[0];
    if (row !== undefined) return { itemId: row.item_id, duplicate: !row.inserted };
    const existing = await this.handle.run<{ item_id: string }>(
      this.sql.existing,
      [item.queue, item.itemId, item.dedupeKey],
      'enqueue: find duplicate',
    );
    if (existing[0] !== undefined) return { itemId: existing[0].item_id, duplicate: true };
    throw new LoomError(
      ErrorCode.STORE_FAILURE,
      `debounced enqueue of ${item.itemId} into ${item.queue} was neither written nor a duplicate`,
      { operation: 'enqueue' },
    );
  }

  /** See {@link QueueStore.claim}: lock the queue row, then one claim statement, one transaction. */
  async claim(queue: string, options: ClaimOptions): Promise<QueueItem[]> {
    this.assertWritable('claim');
    const claim = prepareClaim(queue, options, this.clock.now());
    const rows = await this.handle.transaction('claim', async (query) => {
      const locked = await query(this.sql.lockQueue, [claim.queue]);
      if (locked.length === 0) return []; // never enqueued into: nothing to claim
      return query<QueueItemRow>(this.sql.claim, [
        claim.queue,
        claim.owner,
        claim.nowMs,
        claim.claimExpiresAtMs,
        claim.limit,
        claim.concurrencyMax,
        claim.partitionConcurrencyMax,
        claim.rateCount,
        claim.windowStartMs,
        Limits.queueClaimScanMax,
        claim.flows === undefined ? null : claim.flows.map((flow) => flow.name),
        claim.flows === undefined ? null : claim.flows.map((flow) => flow.version),
      ]);
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
    this.assertWritable('renew');
    const name = checkQueueName(queue);
    checkLeaseOwner(owner);
    const nowMs = this.clock.now();
    const expiresAtMs = leaseExpiry(claimTtlMs, nowMs);
    const ids = checkQueueBatch(itemIds, 'renew');
    if (ids.length === 0) return [];
    const rows = await this.handle.run<{ item_id: string }>(
      this.sql.renew,
      [name, ids, owner, expiresAtMs, nowMs],
      'renew',
    );
    const renewed = new Set(rows.map((row) => row.item_id));
    return ids.filter((id) => !renewed.has(id));
  }

  /** See {@link QueueStore.complete}: one statement. */
  async complete(
    queue: string,
    itemIds: readonly string[],
    outcome?: QueueItemOutcome,
  ): Promise<void> {
    this.assertWritable('complete');
    const name = checkQueueName(queue);
    const ids = checkQueueBatch(itemIds, 'complete');
    const ended = checkQueueOutcome(outcome);
    if (ids.length === 0) return;
    await this.handle.run(this.sql.complete, [name, ids, this.clock.now(), ended], 'complete');
  }

  /** See {@link QueueStore.queueStats}: one statement. */
  async queueStats(queue: string): Promise<QueueStats> {
    this.handle.assertOpen(this.backend);
    const name = checkQueueName(queue);
    const rows = await this.handle.run<QueueStats>(
      this.sql.stats,
      [name, this.clock.now(), 1],
      'queueStats',
    );
    return rows[0] ?? { queue: name, depth: 0, claimed: 0, completed: 0, failed: 0, cancelled: 0 };
  }

  /** See {@link QueueStore.listQueues}: one statement per page. */
  async listQueues(options?: ListQueuesOptions): Promise<QueueStats[]> {
    this.handle.assertOpen(this.backend);
    const { afterQueue, limit } = listQueuesOptions(options);
    return this.handle.run<QueueStats>(
      this.sql.list,
      [afterQueue, this.clock.now(), limit],
      'listQueues',
    );
  }

  /** See {@link QueueStore.get}. */
  async get(queue: string, itemId: string): Promise<QueueItem | undefined> {
    this.handle.assertOpen(this.backend);
    const rows = await this.handle.run<QueueItemRow>(
      this.sql.get,
      [checkQueueName(queue), checkQueueItemId(itemId)],
      'get queue item',
    );
    return rows[0] === undefined ? undefined : queueItemFromRow(rows[0]);
  }

  /** See {@link QueueStore.unfinishedOfPartition}: one statement. */
  async unfinishedOfPartition(queue: string, partitionKey: string): Promise<QueueItem[]> {
    this.handle.assertOpen(this.backend);
    const rows = await this.handle.run<QueueItemRow>(
      this.sql.unfinished,
      [checkQueueName(queue), checkPartitionKey(partitionKey), Limits.queueBatchMax],
      'read a partition',
    );
    return rows.map(queueItemFromRow);
  }

  /** Further calls fail with `STORE_CLOSED`. Ends the pool only if the store created it. */
  async close(): Promise<void> {
    await this.handle.close();
  }

  private assertWritable(operation: string): void {
    this.handle.assertOpen(this.backend);
    if (this.readOnly) throw storeReadOnly('postgres queue', operation);
  }
}
