import type {
  AppendGuard,
  ClaimDueOptions,
  EventEnvelope,
  FindExecutionsOptions,
  PruneOptions,
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
  TransactionalEventStore,
} from './event-store.js';
import { encodedTextOf } from './internal/encoded-payloads.js';
import { isThenable } from './internal/is-thenable.js';
import type { LeaseStore } from './lease-store.js';

/**
 * The exact JSON text the runtime recorded for `envelope`'s payload, when the runtime built the
 * envelope and its `payload` is still the value it encoded; otherwise undefined (an envelope a
 * caller built, or one whose payload a decorator replaced). A decorator that rewrites payloads
 * starts from this text when present: the payload object may be an effect's live value that
 * changed after it was recorded, and the log must keep what the flow saw.
 *
 * @example
 * const text = recordedPayloadText(envelope) ?? JSON.stringify(envelope.payload);
 */
export function recordedPayloadText(envelope: EventEnvelope): string | undefined {
  return encodedTextOf(envelope);
}

/**
 * How {@link transactRewriting} hands a decorator the envelopes of a transaction, inside it.
 * `canAwait` is true when `work` returned a promise (the store holds its transaction across an
 * await); when false the store may be one that cannot (SQLite: better-sqlite3's transactions are
 * synchronous), so the decorator should return its envelopes synchronously if it can. A promise
 * returned then is handed to the store, which SQLite refuses with `INVALID_ARGUMENT`.
 */
export type TransactRewrite = (
  envelopes: readonly EventEnvelope[],
  canAwait: boolean,
) => readonly EventEnvelope[] | Promise<readonly EventEnvelope[]>;

/**
 * Runs `inner.transact` with the envelopes `envelopes(result)` builds passed through `rewrite`
 * inside the same transaction, so a decorator that rewrites payloads (encryption,
 * externalisation) also covers exactly-once steps. `envelopes` is called exactly once, after
 * `work`; an error `rewrite` throws rolls the transaction back like one of `work`'s. Returns
 * `work`'s result and the events as the store stored them (rewritten).
 *
 * @example
 * class Upper extends ForwardingEventStore {
 *   readonly transact: TransactionalEventStore['transact'] | undefined;
 *   constructor(inner: EventStore) {
 *     super(inner);
 *     if (isTransactional(inner))
 *       this.transact = (work, envelopes, guard) =>
 *         transactRewriting(inner, work, envelopes, guard, (list) => list.map(upper));
 *   }
 * }
 */
export async function transactRewriting<T>(
  inner: TransactionalEventStore,
  work: (tx: unknown) => T | Promise<T>,
  envelopes: (result: T) => readonly EventEnvelope[],
  guard: AppendGuard | undefined,
  rewrite: TransactRewrite,
): Promise<{ result: T; stored: StoredEvent[] }> {
  interface Rewritten {
    value: T;
    envelopes: readonly EventEnvelope[];
  }
  const wrapped = (tx: unknown): Rewritten | Promise<Rewritten> => {
    const result = work(tx);
    if (isThenable(result)) {
      return Promise.resolve(result).then(async (value) => ({
        value,
        envelopes: await rewrite(envelopes(value), true),
      }));
    }
    const rewritten = rewrite(envelopes(result), false);
    if (!isThenable(rewritten)) return { value: result, envelopes: rewritten };
    const later = Promise.resolve(rewritten).then((list) => ({ value: result, envelopes: list }));
    // A store that refuses a promise (SQLite) drops it: its failure must not go unhandled.
    later.catch(() => {});
    return later;
  };
  const { result, stored } = await inner.transact(wrapped, (done) => done.envelopes, guard);
  return { result: result.value, stored };
}

/**
 * An `EventStore` that hands every call to `inner` unchanged: the base of store decorators
 * (`@loom/plugin-crypto`, `@loom/plugin-content`), which override only the calls they change.
 * It offers no `transact` and no `appendBatch` (a decorator that rewrites payloads cannot pass
 * them through unchanged: it defines them itself, with {@link transactRewriting} for `transact`),
 * and the inner store's lease store when it has one.
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

  claimDue(nowMs: number, limit: number, options?: ClaimDueOptions) {
    return this.inner.claimDue(nowMs, limit, options);
  }

  unclaimDue(executionIds: readonly string[], nowMs: number) {
    return this.inner.unclaimDue(executionIds, nowMs);
  }

  prune(options: PruneOptions) {
    return this.inner.prune(options);
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
