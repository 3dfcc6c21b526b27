import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { decodePayload } from '../../internal/json-codec.js';
import { checkLeaseOwner, leaseExpiry } from '../../internal/lease-input.js';
import {
  checkPartitionKey,
  checkQueueBatch,
  checkQueueItemId,
  checkQueueName,
  checkQueueOutcome,
  claimBudget,
  debounceDueAt,
  listQueuesOptions,
  partitionLimitOf,
  pickClaims,
  prepareClaim,
  prepareEnqueue,
} from '../../internal/queue-input.js';
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
  QueueThrottle,
} from '../../queue-store.js';

/** Options of {@link InMemoryQueueStore}. */
export interface InMemoryQueueStoreOptions {
  /** Judges claim expiry and rate windows. Default: the wall clock. */
  clock?: Clock;
}

interface Row extends Omit<QueueItem, 'input'> {
  inputText: string;
  seq: number;
}

/**
 * Queues in process memory: for tests, simulation and single-process runtimes. Same contract as
 * the durable backends (one conformance suite); every call runs synchronously to completion, so
 * claims never interleave. Finished items are kept (item ids stay unique forever).
 *
 * Error codes: `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, `STORE_CLOSED`.
 *
 * @example
 * const queues = new InMemoryQueueStore();
 * await queues.enqueue({ queue: 'emails', flow: 'send-email', input: { to: 'ada@example.com' } });
 * const items = await queues.claim('emails', { owner: 'node-a', limit: 10, concurrencyMax: 5, claimTtlMs: 30_000 });
 * await queues.complete('emails', items.map((item) => item.itemId));
 */
export class InMemoryQueueStore implements QueueStore {
  readonly backend = 'memory';
  private readonly clock: Clock;
  private readonly queues = new Map<string, Map<string, Row>>();
  private seq = 0;
  private closed = false;

  constructor(options: InMemoryQueueStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  /** See {@link QueueStore.enqueue}. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, `STORE_CLOSED`. */
  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    this.assertOpen();
    const item = prepareEnqueue(input);
    let rows = this.queues.get(item.queue);
    const existing = rows?.get(item.itemId);
    if (existing !== undefined) return { itemId: existing.itemId, duplicate: true };
    if (item.dedupeKey !== null && rows !== undefined) {
      for (const row of rows.values()) {
        if (row.dedupeKey === item.dedupeKey && row.status !== 'done') {
          return { itemId: row.itemId, duplicate: true };
        }
      }
    }
    const nowMs = this.clock.now();
    if (item.idempotencyKey !== null && rows !== undefined) {
      for (const row of rows.values()) {
        if (row.idempotency?.key === item.idempotencyKey && row.idempotency.untilMs > nowMs) {
          return { itemId: row.itemId, duplicate: true };
        }
      }
    }
    if (item.debounceKey !== null && rows !== undefined) {
      for (const row of rows.values()) {
        if (row.debounce?.key === item.debounceKey && row.status === 'pending') {
          row.inputText = item.inputText;
          row.debounce.dueAtMs = debounceDueAt(
            nowMs,
            item.debouncePeriodMs as number,
            row.debounce.deadlineMs,
          );
          return { itemId: row.itemId, duplicate: true };
        }
      }
    }
    if (rows === undefined) {
      rows = new Map();
      this.queues.set(item.queue, rows);
    }
    rows.set(item.itemId, {
      queue: item.queue,
      itemId: item.itemId,
      flow: item.flow,
      version: item.version,
      inputText: item.inputText,
      priority: item.priority,
      dedupeKey: item.dedupeKey,
      partitionKey: item.partitionKey,
      partitionConcurrencyMax: item.partitionConcurrencyMax,
      throttle:
        item.throttleKey === null
          ? null
          : {
              key: item.throttleKey,
              count: item.throttleCount as number,
              windowMs: item.throttleWindowMs as number,
            },
      idempotency:
        item.idempotencyKey === null
          ? null
          : { key: item.idempotencyKey, untilMs: nowMs + (item.idempotencyWindowMs as number) },
      debounce:
        item.debounceKey === null
          ? null
          : {
              key: item.debounceKey,
              dueAtMs: nowMs + (item.debouncePeriodMs as number),
              deadlineMs: item.debounceMaxWaitMs === null ? null : nowMs + item.debounceMaxWaitMs,
            },
      status: 'pending',
      owner: null,
      claimExpiresAtMs: null,
      startedAtMs: null,
      attempts: 0,
      enqueuedAtMs: nowMs,
      completedAtMs: null,
      outcome: null,
      seq: ++this.seq,
    });
    return { itemId: item.itemId, duplicate: false };
  }

  /** See {@link QueueStore.claim}. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `STORE_CLOSED`. */
  async claim(queue: string, options: ClaimOptions): Promise<QueueItem[]> {
    this.assertOpen();
    const claim = prepareClaim(queue, options, this.clock.now());
    const rows = [...(this.queues.get(claim.queue)?.values() ?? [])];
    const { nowMs } = claim;
    let running = 0;
    let startedInWindow = 0;
    const runningByPartition = new Map<string, number>();
    for (const row of rows) {
      if (row.status === 'running' && (row.claimExpiresAtMs ?? 0) > nowMs) {
        running += 1;
        if (row.partitionKey !== null) {
          runningByPartition.set(
            row.partitionKey,
            (runningByPartition.get(row.partitionKey) ?? 0) + 1,
          );
        }
      }
      if (claim.windowStartMs !== null && (row.startedAtMs ?? -Infinity) > claim.windowStartMs) {
        startedInWindow += 1;
      }
    }
    const throttleCounts = new Map<string, number>();
    const startedOf = (throttle: QueueThrottle): number => {
      const memoKey = `${throttle.windowMs}:${throttle.key}`;
      let started = throttleCounts.get(memoKey);
      if (started === undefined) {
        started = throttleStarted(rows, throttle, nowMs);
        throttleCounts.set(memoKey, started);
      }
      return started;
    };
    const candidates = rows
      .filter(
        (row) =>
          (row.status === 'pending' ||
            (row.status === 'running' && (row.claimExpiresAtMs ?? 0) <= nowMs)) &&
          (row.debounce === null || row.debounce.dueAtMs <= nowMs) &&
          (claim.flows === undefined ||
            claim.flows.some((flow) => flow.name === row.flow && flow.version === row.version)) &&
          !partitionFull(row, runningByPartition, claim.partitionConcurrencyMax) &&
          (row.throttle === null || startedOf(row.throttle) < row.throttle.count),
      )
      .sort((a, b) => b.priority - a.priority || a.seq - b.seq)
      .slice(0, Limits.queueClaimScanMax);
    const budget = claimBudget(claim, running, startedInWindow);
    const picked = pickClaims(
      candidates.map((row) => ({
        itemId: row.itemId,
        partitionKey: row.partitionKey,
        partitionConcurrencyMax: row.partitionConcurrencyMax,
        throttleKey: row.throttle?.key ?? null,
        throttleCount: row.throttle?.count ?? null,
        throttleStarted: row.throttle === null ? 0 : startedOf(row.throttle),
      })),
      budget,
      runningByPartition,
      claim.partitionConcurrencyMax,
    );
    const byId = new Map(candidates.map((row) => [row.itemId, row]));
    return picked.map((itemId) => {
      const row = byId.get(itemId) as Row;
      row.status = 'running';
      row.owner = claim.owner;
      row.claimExpiresAtMs = claim.claimExpiresAtMs;
      row.startedAtMs = nowMs;
      row.attempts += 1;
      return toItem(row);
    });
  }

  /** See {@link QueueStore.renew}. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `STORE_CLOSED`. */
  async renew(
    queue: string,
    owner: string,
    itemIds: readonly string[],
    claimTtlMs: number,
  ): Promise<string[]> {
    this.assertOpen();
    const name = checkQueueName(queue);
    checkLeaseOwner(owner);
    const nowMs = this.clock.now();
    const expiresAtMs = leaseExpiry(claimTtlMs, nowMs);
    const ids = checkQueueBatch(itemIds, 'renew');
    const rows = this.queues.get(name);
    const lost: string[] = [];
    for (const itemId of ids) {
      const row = rows?.get(itemId);
      const live =
        row?.status === 'running' && row.owner === owner && (row.claimExpiresAtMs ?? 0) > nowMs;
      if (live) row.claimExpiresAtMs = expiresAtMs;
      else lost.push(itemId);
    }
    return lost;
  }

  /** See {@link QueueStore.complete}. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `STORE_CLOSED`. */
  async complete(
    queue: string,
    itemIds: readonly string[],
    outcome?: QueueItemOutcome,
  ): Promise<void> {
    this.assertOpen();
    const name = checkQueueName(queue);
    const ids = checkQueueBatch(itemIds, 'complete');
    const ended = checkQueueOutcome(outcome);
    const rows = this.queues.get(name);
    const nowMs = this.clock.now();
    for (const itemId of ids) {
      const row = rows?.get(itemId);
      if (row === undefined || row.status === 'done') continue;
      row.status = 'done';
      row.completedAtMs = nowMs;
      row.outcome = ended;
    }
  }

  /** See {@link QueueStore.queueStats}. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `STORE_CLOSED`. */
  async queueStats(queue: string): Promise<QueueStats> {
    this.assertOpen();
    const name = checkQueueName(queue);
    return this.statsOf(name, this.queues.get(name), this.clock.now());
  }

  /** See {@link QueueStore.listQueues}. Throws `INVALID_ARGUMENT`, `STORE_CLOSED`. */
  async listQueues(options?: ListQueuesOptions): Promise<QueueStats[]> {
    this.assertOpen();
    const { afterQueue, limit } = listQueuesOptions(options);
    const nowMs = this.clock.now();
    return [...this.queues.keys()]
      .filter((name) => name > afterQueue)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, limit)
      .map((name) => this.statsOf(name, this.queues.get(name), nowMs));
  }

  private statsOf(queue: string, rows: Map<string, Row> | undefined, nowMs: number): QueueStats {
    const stats: QueueStats = {
      queue,
      depth: 0,
      claimed: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
    };
    for (const row of rows?.values() ?? []) {
      if (row.status === 'done') {
        if (row.outcome === 'failed') stats.failed += 1;
        else if (row.outcome === 'cancelled') stats.cancelled += 1;
        else stats.completed += 1;
      } else if (row.status === 'running' && (row.claimExpiresAtMs ?? 0) > nowMs) {
        stats.claimed += 1;
      } else {
        stats.depth += 1;
      }
    }
    return stats;
  }

  /** See {@link QueueStore.get}. Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `STORE_CLOSED`. */
  async get(queue: string, itemId: string): Promise<QueueItem | undefined> {
    this.assertOpen();
    const row = this.queues.get(checkQueueName(queue))?.get(checkQueueItemId(itemId));
    return row === undefined ? undefined : toItem(row);
  }

  /** See {@link QueueStore.unfinishedOfPartition}. Throws `INVALID_ARGUMENT`, `STORE_CLOSED`. */
  async unfinishedOfPartition(queue: string, partitionKey: string): Promise<QueueItem[]> {
    this.assertOpen();
    const name = checkQueueName(queue);
    const key = checkPartitionKey(partitionKey);
    return [...(this.queues.get(name)?.values() ?? [])]
      .filter((row) => row.partitionKey === key && row.status !== 'done')
      .sort((a, b) => a.seq - b.seq)
      .slice(0, Limits.queueBatchMax)
      .map(toItem);
  }

  /** Further calls fail with `STORE_CLOSED`. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new LoomError(ErrorCode.STORE_CLOSED, 'the memory queue store is closed', {
        backend: this.backend,
      });
    }
  }
}

function toItem(row: Row): QueueItem {
  const { inputText, seq: _seq, debounce, ...rest } = row;
  return { ...rest, debounce: debounce && { ...debounce }, input: decodePayload(inputText) };
}

/**
 * True when the row's partition already runs its limit: the scan skips it, so a saturated hot key
 * never fills the scan window and holds back the keys behind it.
 */
function partitionFull(
  row: Row,
  runningByPartition: ReadonlyMap<string, number>,
  claimPartitionMax: number | null,
): boolean {
  if (row.partitionKey === null) return false;
  const limit = partitionLimitOf(row, claimPartitionMax);
  return limit !== null && (runningByPartition.get(row.partitionKey) ?? 0) >= limit;
}

/** Claims of the throttle's key within its window ending now (finished items included). */
function throttleStarted(rows: readonly Row[], throttle: QueueThrottle, nowMs: number): number {
  const windowStartMs = nowMs - throttle.windowMs;
  let started = 0;
  for (const row of rows) {
    if (row.throttle?.key === throttle.key && (row.startedAtMs ?? -Infinity) > windowStartMs) {
      started += 1;
    }
  }
  return started;
}
