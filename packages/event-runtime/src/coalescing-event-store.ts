import { type Clock, systemClock } from './clock.js';
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
import { ErrorCode, LoomError } from './errors.js';
import {
  type AppendOutcome,
  type AppendRequest,
  canAppendBatch,
  type EventStore,
  type FenceStore,
  isTransactional,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionHandler,
  type TransactionalEventStore,
} from './event-store.js';
import { storeClosed } from './internal/store-errors.js';
import type { LeaseStore } from './lease-store.js';

/** The most appends one batch may merge: a named limit, so a statement stays a sane size. */
export const coalescingBatchMax = 1_000;
/** The longest `maxWaitMs` accepted: a batch must not hold a caller for long. */
export const coalescingWaitMsMax = 1_000;

/** How a {@link CoalescingEventStore} merges appends. */
export interface CoalescingEventStoreOptions {
  /**
   * Most appends (of distinct executions) merged into one batch. Default 64; 1 to
   * {@link coalescingBatchMax}. A batch never holds two appends of one execution: the later one
   * waits for the next batch, so an execution's appends stay in order.
   */
  maxBatch?: number;
  /**
   * How long the first append into an idle store waits for others to join its batch. Default 0:
   * the batch goes once the current turn of I/O is over (`clock.defer`), and under load batches
   * form by themselves, because appends that arrive while a batch is in flight wait for the next
   * one (group commit). 0 to {@link coalescingWaitMsMax}. A full batch never waits.
   */
  maxWaitMs?: number;
  /** Batches in flight at once. Default 1 (group commit); at most 16. */
  maxInFlight?: number;
  /** Timers and `defer` (default `systemClock`). */
  clock?: Clock;
}

/** What a {@link CoalescingEventStore} did so far (a snapshot; never reset). */
export interface CoalescingStats {
  /** `append` calls it took. */
  appends: number;
  /** Batches it sent: one `appendBatch` call (one statement on Postgres) each. */
  batches: number;
  /** The most appends one batch held. */
  largestBatch: number;
}

interface Queued extends AppendRequest {
  /** The execution, or a unique key for an envelope list too broken to name one. */
  key: unknown;
  resolve(stored: StoredEvent[]): void;
  reject(error: unknown): void;
}

const inFlightMax = 16;

function checkOption(name: string, value: unknown, min: number, max: number, integer: boolean) {
  const ok =
    typeof value === 'number' &&
    value >= min &&
    value <= max &&
    (integer ? Number.isInteger(value) : Number.isFinite(value));
  if (!ok) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `CoalescingEventStore option ${name} must be ${integer ? 'an integer' : 'a number'} from ` +
        `${min} to ${max}, got ${String(value)}`,
      { path: name, actual: typeof value === 'number' ? value : String(value) },
    );
  }
  return value as number;
}

/**
 * Merges concurrent appends of many executions into one write: a decorator over any
 * `EventStore` (ADR 0030). Over a store that implements `appendBatch` (Postgres) each batch is
 * one statement and one transaction, with the fence and sequence checked per execution, so one
 * execution's `SEQUENCE_CONFLICT` or `FENCE_STALE` fails only its own append and the others
 * commit. Over any other store each append of a batch goes to the store on its own (correct,
 * just not merged). Nothing is acknowledged before its commit. Every other call passes through.
 *
 * Error codes: those of the inner store's `append`, `INVALID_ARGUMENT` (options),
 * `STORE_CLOSED` (after `close`).
 *
 * @example
 * const store = new CoalescingEventStore(postgresStore, { maxBatch: 64 });
 * await Promise.all(ids.map((executionId) => store.append([{ executionId, sequence: 0, type: 'x', payload: null }])));
 */
export class CoalescingEventStore implements EventStore {
  readonly transact: TransactionalEventStore['transact'] | undefined;
  private readonly maxBatch: number;
  private readonly maxWaitMs: number;
  private readonly maxInFlight: number;
  private readonly clock: Clock;
  private queue: Queued[] = [];
  /** Executions with an append in a batch in flight: their next append waits. */
  private readonly busy = new Set<unknown>();
  private inFlight = 0;
  private scheduled = false;
  private cancelWait: (() => void) | undefined;
  private closed = false;
  private drained: (() => void) | undefined;
  private readonly counters: CoalescingStats = { appends: 0, batches: 0, largestBatch: 0 };

  /** Throws `INVALID_ARGUMENT` for an option out of range. */
  constructor(
    readonly inner: EventStore,
    options: CoalescingEventStoreOptions = {},
  ) {
    this.maxBatch = checkOption('maxBatch', options.maxBatch ?? 64, 1, coalescingBatchMax, true);
    this.maxWaitMs = checkOption(
      'maxWaitMs',
      options.maxWaitMs ?? 0,
      0,
      coalescingWaitMsMax,
      false,
    );
    this.maxInFlight = checkOption('maxInFlight', options.maxInFlight ?? 1, 1, inFlightMax, true);
    this.clock = options.clock ?? systemClock;
    if (isTransactional(inner)) {
      this.transact = (work, envelopes, guard) => {
        if (this.closed) return Promise.reject(storeClosed(this.backend));
        return inner.transact(work, envelopes, guard);
      };
    }
  }

  get backend(): string {
    return this.inner.backend;
  }

  get fences(): FenceStore {
    return this.inner.fences;
  }

  /** Appends, batches sent and the largest batch so far. */
  get stats(): CoalescingStats {
    return { ...this.counters };
  }

  /**
   * Queues the append for the next batch and resolves once the batch committed it. Same
   * contract as `EventStore.append` (all or nothing; typed errors), plus `STORE_CLOSED` after
   * `close`.
   */
  append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]> {
    if (this.closed) return Promise.reject(storeClosed(this.backend));
    this.counters.appends++;
    const first: unknown = Array.isArray(envelopes) ? envelopes[0] : undefined;
    const id =
      typeof first === 'object' && first !== null
        ? (first as { executionId?: unknown }).executionId
        : undefined;
    return new Promise<StoredEvent[]>((resolve, reject) => {
      this.queue.push({
        envelopes,
        guard,
        key: typeof id === 'string' ? id : Symbol('unnamed'),
        resolve,
        reject,
      });
      this.schedule();
    });
  }

  read(executionId: string, options?: ReadOptions) {
    return this.inner.read(executionId, options);
  }

  readAll(options?: ReadAllOptions) {
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

  defaultLeaseStore(): LeaseStore | undefined {
    return this.inner.defaultLeaseStore?.();
  }

  /**
   * Refuses new appends (`STORE_CLOSED`), sends every queued one at once (they commit or fail
   * as they would have), waits for the batches in flight, then closes the inner store.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.cancelWait?.();
      this.cancelWait = undefined;
      if (this.queue.length > 0 || this.inFlight > 0) {
        const drained = new Promise<void>((resolve) => {
          this.drained = resolve;
        });
        this.flush();
        await drained;
      }
    }
    await this.inner.close();
  }

  /**
   * Arms the next flush: after this turn; after `maxWaitMs` when the store is idle and the batch
   * is not full; right after this turn when a batch just returned with appends waiting (they
   * waited for it already: group commit).
   */
  private schedule(afterBatch = false): void {
    if (this.inFlight >= this.maxInFlight || this.scheduled) return;
    const wait =
      this.maxWaitMs > 0 &&
      !afterBatch &&
      this.inFlight === 0 &&
      this.queue.length < this.maxBatch &&
      !this.closed;
    if (wait) {
      this.cancelWait ??= this.clock.setTimer(() => {
        this.cancelWait = undefined;
        this.flush();
      }, this.maxWaitMs);
      return;
    }
    this.scheduled = true;
    this.clock.defer(() => this.flush());
  }

  /** Sends as many batches as may be in flight. */
  private flush(): void {
    this.scheduled = false;
    this.cancelWait?.();
    this.cancelWait = undefined;
    while (this.inFlight < this.maxInFlight) {
      const batch = this.take();
      if (batch.length === 0) break;
      this.inFlight++;
      this.counters.batches++;
      this.counters.largestBatch = Math.max(this.counters.largestBatch, batch.length);
      void this.send(batch).finally(() => {
        for (const queued of batch) this.busy.delete(queued.key);
        this.inFlight--;
        if (this.queue.length > 0) {
          if (this.closed) this.flush();
          else this.schedule(true);
        } else if (this.inFlight === 0) this.drained?.();
      });
    }
    if (this.queue.length === 0 && this.inFlight === 0) this.drained?.();
  }

  /** The next batch: queued appends in order, at most one per execution and `maxBatch` in all. */
  private take(): Queued[] {
    const batch: Queued[] = [];
    const rest: Queued[] = [];
    for (const queued of this.queue) {
      if (batch.length < this.maxBatch && !this.busy.has(queued.key)) {
        this.busy.add(queued.key);
        batch.push(queued);
      } else {
        rest.push(queued);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async send(batch: readonly Queued[]): Promise<void> {
    const { inner } = this;
    if (!canAppendBatch(inner)) {
      await Promise.all(
        batch.map((queued) =>
          Promise.resolve()
            .then(() => inner.append(queued.envelopes, queued.guard))
            .then(queued.resolve, queued.reject),
        ),
      );
      return;
    }
    let outcomes: AppendOutcome[];
    try {
      outcomes = await inner.appendBatch(batch);
    } catch (error) {
      for (const queued of batch) queued.reject(error);
      return;
    }
    batch.forEach((queued, index) => {
      const outcome = outcomes[index];
      if (outcome === undefined) {
        queued.reject(new Error('invariant: appendBatch returned fewer outcomes than requests'));
      } else if (outcome.ok) queued.resolve(outcome.stored);
      else queued.reject(outcome.error);
    });
  }
}
