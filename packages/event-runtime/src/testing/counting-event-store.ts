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
} from '../envelope.js';
import type {
  AppendOutcome,
  AppendRequest,
  EventStore,
  SubscribeOptions,
  SubscriptionHandler,
  TransactionalEventStore,
} from '../event-store.js';
import { canAppendBatch, isTransactional } from '../event-store.js';
import type { LeaseStore } from '../lease-store.js';

/** Calls made through a {@link CountingEventStore}. */
export interface StoreCallCounts {
  /**
   * Appends: `append` calls plus the requests inside `appendBatch` calls (one durability barrier
   * of one execution each). Round trips: `appends - batchedAppends + batches`.
   */
  appends: number;
  /** Envelopes handed to `append` or inside `appendBatch` requests. */
  eventsAppended: number;
  /** `appendBatch` calls: one store round trip each, for many executions (group commit). */
  batches: number;
  /** Requests inside those `appendBatch` calls (counted in `appends` too). */
  batchedAppends: number;
  /** `transact` calls (one transaction, one round trip on SQLite, a few on Postgres). */
  transactions: number;
  reads: number;
  readAlls: number;
  findExecutions: number;
}

/** Options of a {@link CountingEventStore}. */
export interface CountingEventStoreOptions {
  /**
   * Offer the inner store's `appendBatch` (when it has one), so a runtime's group commit batches
   * through this wrapper. Default true; false makes every append a plain `append` call.
   */
  appendBatch?: boolean;
}

/**
 * Wraps a store and counts its calls, changing nothing else. Tests and benchmarks use it to
 * assert round trips ("an n-step flow costs n + 1 appends") without timing anything.
 */
export class CountingEventStore implements EventStore {
  readonly counts: StoreCallCounts = {
    appends: 0,
    eventsAppended: 0,
    batches: 0,
    batchedAppends: 0,
    transactions: 0,
    reads: 0,
    readAlls: 0,
    findExecutions: 0,
  };
  readonly transact: TransactionalEventStore['transact'] | undefined;
  readonly appendBatch:
    | ((requests: readonly AppendRequest[]) => Promise<AppendOutcome[]>)
    | undefined;

  constructor(
    readonly inner: EventStore,
    options: CountingEventStoreOptions = {},
  ) {
    if (options.appendBatch !== false && canAppendBatch(inner)) {
      this.appendBatch = (requests) => {
        this.counts.batches += 1;
        this.counts.batchedAppends += requests.length;
        this.counts.appends += requests.length;
        for (const request of requests) {
          this.counts.eventsAppended += Array.isArray(request.envelopes)
            ? request.envelopes.length
            : 0;
        }
        return inner.appendBatch(requests);
      };
    }
    if (isTransactional(inner)) {
      this.transact = (work, envelopes, guard) => {
        this.counts.transactions += 1;
        return inner.transact(work, envelopes, guard);
      };
    }
  }

  get backend(): string {
    return this.inner.backend;
  }

  get fences() {
    return this.inner.fences;
  }

  reset(): void {
    for (const key of Object.keys(this.counts) as Array<keyof StoreCallCounts>)
      this.counts[key] = 0;
  }

  append(envelopes: readonly EventEnvelope[], guard?: AppendGuard) {
    this.counts.appends += 1;
    this.counts.eventsAppended += Array.isArray(envelopes) ? envelopes.length : 0;
    return this.inner.append(envelopes, guard);
  }

  read(executionId: string, options?: ReadOptions) {
    this.counts.reads += 1;
    return this.inner.read(executionId, options);
  }

  readAll(options?: ReadAllOptions) {
    this.counts.readAlls += 1;
    return this.inner.readAll(options);
  }

  findExecutions(options: FindExecutionsOptions) {
    this.counts.findExecutions += 1;
    return this.inner.findExecutions(options);
  }

  sendSignal(signal: SignalInput) {
    return this.inner.sendSignal(signal);
  }

  readSignals(executionId: string, options?: ReadSignalsOptions) {
    this.counts.reads += 1;
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

  subscribe(options: SubscribeOptions, handler: SubscriptionHandler) {
    return this.inner.subscribe(options, handler);
  }

  verify(executionId: string) {
    return this.inner.verify(executionId);
  }

  defaultLeaseStore(): LeaseStore | undefined {
    return this.inner.defaultLeaseStore?.();
  }

  close() {
    return this.inner.close();
  }
}
