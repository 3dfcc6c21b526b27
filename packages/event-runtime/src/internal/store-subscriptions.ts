import type { SubscribeOptions, Subscription, SubscriptionHandler } from '../event-store.js';
import { type PumpSource, SubscriptionPump } from './subscription-pump.js';

/**
 * `subscribe()` for every backend, written once: each subscription is a {@link SubscriptionPump}
 * over the backend's `read`/`readAll` and its wake-ups, and the set of open ones is kept so
 * that closing the store closes them all (awaiting any handler call still running).
 */
export class StoreSubscriptions {
  private readonly open = new Set<Subscription>();

  constructor(private readonly source: PumpSource) {}

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
