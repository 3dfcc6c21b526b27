import type {
  ClaimOptions,
  EnqueueInput,
  EnqueueResult,
  ListQueuesOptions,
  QueueItem,
  QueueItemOutcome,
  QueueStats,
  QueueStore,
} from '@loom/event-runtime';
import type { ClaimObservation } from './internal/recorder.js';
import type { StoreLink } from './internal/store-link.js';

/**
 * One node's handle on the shared queue store: latency each way, no answer while paused, and
 * the node's torn connections. After every claim it records how many items of the queue are
 * under a live claim, in all and per limited key, for the checks that neither the global
 * concurrency limit nor a key's own limit is ever exceeded.
 */
export class SimQueueStore implements QueueStore {
  constructor(
    private readonly inner: QueueStore,
    private readonly link: StoreLink,
    private readonly nowMs: () => number,
  ) {}

  enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    return this.link.pass('enqueue', async () => {
      const result = await this.inner.enqueue(input);
      const { enqueued } = this.link.recorder;
      const ids = enqueued.get(input.queue) ?? new Set<string>();
      enqueued.set(input.queue, ids.add(result.itemId));
      // A resend of an enqueue whose first attempt was written (its ack lost) answers the item of
      // its own id, `duplicate`, and applies nothing: the store checks the id before any debounce.
      const resent = result.duplicate && result.itemId === input.itemId;
      if (input.debounce !== undefined && !resent) {
        // The memory store applies an enqueue in one synchronous call, so this continuation runs
        // in store order: what is recorded last is what the store holds.
        const debounced = this.link.recorder.debounced;
        const seen = debounced.get(result.itemId);
        debounced.set(result.itemId, {
          lastInput: JSON.stringify(input.input),
          claimed: seen?.claimed ?? false,
          appliedAfterClaim: (seen?.appliedAfterClaim ?? 0) + (seen?.claimed ? 1 : 0),
        });
      }
      return result;
    });
  }

  claim(queue: string, options: ClaimOptions): Promise<QueueItem[]> {
    return this.link.pass('claim', async () => {
      const items = await this.inner.claim(queue, options);
      const stats = await this.inner.queueStats(queue);
      const all = await this.itemsOf(queue);
      this.link.recorder.claims.push({
        queue,
        claimedNow: stats.claimed,
        concurrencyMax: options.concurrencyMax,
        keys: this.keyedClaims(all),
        throttles: this.throttledClaims(all),
        debounced: this.debouncedClaims(items),
        atMs: this.nowMs(),
      });
      return items;
    });
  }

  /**
   * Every item enqueued into `queue` so far, read straight from the shared store; an item read
   * `done` is remembered (a done row never changes), so a long run does not decode its whole
   * history again at every claim.
   */
  private async itemsOf(queue: string): Promise<QueueItem[]> {
    const { finishedItems } = this.link.recorder;
    const items: QueueItem[] = [];
    for (const itemId of this.link.recorder.enqueued.get(queue) ?? []) {
      let item = finishedItems.get(itemId);
      if (item === undefined) {
        item = await this.inner.get(queue, itemId);
        if (item === undefined) continue;
        if (item.status === 'done') finishedItems.set(itemId, item);
      }
      items.push(item);
    }
    return items;
  }

  /** Items of each limited key under a live claim now, among `items` (the queue's, just read). */
  private keyedClaims(items: readonly QueueItem[]): ClaimObservation['keys'] {
    const byKey = new Map<string, { claimed: number; limit: number }>();
    const nowMs = this.nowMs();
    for (const item of items) {
      if (item.partitionKey === null || item.partitionConcurrencyMax === null) continue;
      const seen = byKey.get(item.partitionKey) ?? {
        claimed: 0,
        limit: item.partitionConcurrencyMax,
      };
      seen.limit = Math.min(seen.limit, item.partitionConcurrencyMax);
      const live = item.status === 'running' && (item.claimExpiresAtMs ?? 0) > nowMs;
      if (live) seen.claimed += 1;
      byKey.set(item.partitionKey, seen);
    }
    return [...byKey].map(([key, { claimed, limit }]) => ({ key, claimed, limit }));
  }

  /** For each debounced item claimed: claimed with its last applied input, and due. */
  private debouncedClaims(items: readonly QueueItem[]): NonNullable<ClaimObservation['debounced']> {
    const nowMs = this.nowMs();
    return items.flatMap((item) => {
      if (item.debounce === null) return [];
      const seen = this.link.recorder.debounced.get(item.itemId);
      if (seen !== undefined) seen.claimed = true;
      return [
        {
          itemId: item.itemId,
          lastInput: seen?.lastInput === JSON.stringify(item.input),
          due: item.debounce.dueAtMs <= nowMs,
        },
      ];
    });
  }

  /**
   * Items of each throttle key whose latest claim is within the key's window now (the shortest
   * window and lowest count among its items), among `all` (the queue's, just read).
   */
  private throttledClaims(all: readonly QueueItem[]): NonNullable<ClaimObservation['throttles']> {
    const items = all.filter((item) => item.throttle !== null);
    const nowMs = this.nowMs();
    const byKey = new Map<string, { windowMs: number; limit: number }>();
    for (const { throttle } of items) {
      if (throttle === null) continue;
      const seen = byKey.get(throttle.key);
      byKey.set(throttle.key, {
        windowMs: Math.min(seen?.windowMs ?? Infinity, throttle.windowMs),
        limit: Math.min(seen?.limit ?? Infinity, throttle.count),
      });
    }
    return [...byKey].map(([key, { windowMs, limit }]) => ({
      key,
      limit,
      started: items.filter(
        (item) => item.throttle?.key === key && (item.startedAtMs ?? -Infinity) > nowMs - windowMs,
      ).length,
    }));
  }

  renew(
    queue: string,
    owner: string,
    itemIds: readonly string[],
    claimTtlMs: number,
  ): Promise<string[]> {
    return this.link.pass('renew', () => this.inner.renew(queue, owner, itemIds, claimTtlMs));
  }

  complete(queue: string, itemIds: readonly string[], outcome?: QueueItemOutcome): Promise<void> {
    return this.link.pass('complete', () => this.inner.complete(queue, itemIds, outcome));
  }

  get(queue: string, itemId: string): Promise<QueueItem | undefined> {
    return this.link.pass('get', () => this.inner.get(queue, itemId));
  }

  unfinishedOfPartition(queue: string, partitionKey: string): Promise<QueueItem[]> {
    return this.link.pass('unfinishedOfPartition', () =>
      this.inner.unfinishedOfPartition(queue, partitionKey),
    );
  }

  queueStats(queue: string): Promise<QueueStats> {
    return this.link.pass('queueStats', () => this.inner.queueStats(queue));
  }

  listQueues(options?: ListQueuesOptions): Promise<QueueStats[]> {
    return this.link.pass('listQueues', () => this.inner.listQueues(options));
  }

  async close(): Promise<void> {}
}
