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
import type { StoreLink } from './internal/store-link.js';

/**
 * One node's handle on the shared queue store: latency each way, no answer while paused, and
 * the node's torn connections. After every claim it records how many items of the queue are
 * under a live claim, for the check that the global concurrency limit is never exceeded.
 */
export class SimQueueStore implements QueueStore {
  constructor(
    private readonly inner: QueueStore,
    private readonly link: StoreLink,
    private readonly nowMs: () => number,
  ) {}

  enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    return this.link.pass('enqueue', () => this.inner.enqueue(input));
  }

  claim(queue: string, options: ClaimOptions): Promise<QueueItem[]> {
    return this.link.pass('claim', async () => {
      const items = await this.inner.claim(queue, options);
      const stats = await this.inner.queueStats(queue);
      this.link.recorder.claims.push({
        queue,
        claimedNow: stats.claimed,
        concurrencyMax: options.concurrencyMax,
        atMs: this.nowMs(),
      });
      return items;
    });
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

  queueStats(queue: string): Promise<QueueStats> {
    return this.link.pass('queueStats', () => this.inner.queueStats(queue));
  }

  listQueues(options?: ListQueuesOptions): Promise<QueueStats[]> {
    return this.link.pass('listQueues', () => this.inner.listQueues(options));
  }

  async close(): Promise<void> {}
}
