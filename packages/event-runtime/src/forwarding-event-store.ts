import type {
  AppendGuard,
  EventEnvelope,
  FindExecutionsOptions,
  ReadAllOptions,
  ReadOptions,
  ReadSignalsOptions,
  SignalInput,
  StoredEvent,
} from './envelope.js';
import type {
  EventStore,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
} from './event-store.js';
import type { LeaseStore } from './lease-store.js';

/**
 * An `EventStore` that hands every call to `inner` unchanged: the base of store decorators
 * (`@loom/plugin-crypto`, `@loom/plugin-content`), which override only the calls they change.
 * It offers no `transact` and no `appendBatch` (a decorator that rewrites payloads cannot pass
 * them through unchanged), and the inner store's lease store when it has one.
 *
 * @example
 * class LoggingStore extends ForwardingEventStore {
 *   override append(envelopes: readonly EventEnvelope[], guard?: AppendGuard) {
 *     console.log(`appending ${envelopes.length}`);
 *     return super.append(envelopes, guard);
 *   }
 * }
 */
export class ForwardingEventStore implements EventStore {
  readonly defaultLeaseStore?: () => LeaseStore | undefined;

  constructor(readonly inner: EventStore) {
    if (inner.defaultLeaseStore !== undefined)
      this.defaultLeaseStore = () => inner.defaultLeaseStore?.();
  }

  get backend(): string {
    return this.inner.backend;
  }

  get fences() {
    return this.inner.fences;
  }

  append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]> {
    return this.inner.append(envelopes, guard);
  }

  read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]> {
    return this.inner.read(executionId, options);
  }

  readAll(options?: ReadAllOptions): Promise<StoredEvent[]> {
    return this.inner.readAll(options);
  }

  findExecutions(options: FindExecutionsOptions) {
    return this.inner.findExecutions(options);
  }

  sendSignal(signal: SignalInput) {
    return this.inner.sendSignal(signal);
  }

  readSignals(executionId: string, options?: ReadSignalsOptions) {
    return this.inner.readSignals(executionId, options);
  }

  claimDue(nowMs: number, limit: number) {
    return this.inner.claimDue(nowMs, limit);
  }

  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    return this.inner.subscribe(options, handler);
  }

  verify(executionId: string) {
    return this.inner.verify(executionId);
  }

  close() {
    return this.inner.close();
  }
}
