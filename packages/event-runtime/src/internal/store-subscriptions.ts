import type { Clock } from '../clock.js';
import type {
  EventStore,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
} from '../event-store.js';
import { type PumpSource, SubscriptionPump } from './subscription-pump.js';

/** How a backend hears that something was appended, beside the reads it already has. */
export interface AppendFeed {
  /** Call `wake` whenever events of interest may have been appended. Returns an unwatch. */
  watch(executionId: string | undefined, wake: () => void): () => void;
  /** Poll this often as well (for writers the backend cannot hear). 0 = never. */
  pollIntervalMs: number;
  /** The store's clock, which arms the poll timer. */
  clock: Clock;
}

/**
 * `subscribe()` for every backend, written once: each subscription is a {@link SubscriptionPump}
 * over the store's own `read`/`readAll` and the feed's wake-ups, and the set of open ones is
 * kept so that closing the store closes them all (awaiting any handler call still running).
 */
export class StoreSubscriptions {
  private readonly source: PumpSource;
  private readonly open = new Set<Subscription>();

  /** `store` is read lazily, so a store may pass itself from its constructor. */
  constructor(store: Pick<EventStore, 'read' | 'readAll'>, feed: AppendFeed) {
    this.source = {
      readAll: (afterPosition, limit) => store.readAll({ afterPosition, limit }),
      read: (executionId, fromSequence, limit) => store.read(executionId, { fromSequence, limit }),
      watch: (executionId, wake) => feed.watch(executionId, wake),
      pollIntervalMs: feed.pollIntervalMs,
      clock: feed.clock,
    };
  }

  /** Starts delivering to `handler`; the backend checks that it is open before calling this. */
  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    const pump = new SubscriptionPump(this.source, options, handler);
    this.open.add(pump);
    return {
      close: async () => {
        this.open.delete(pump);
        await pump.close();
      },
    };
  }

  /** Closes every open subscription; resolves once no handler call is running. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((subscription) => subscription.close()));
  }
}
