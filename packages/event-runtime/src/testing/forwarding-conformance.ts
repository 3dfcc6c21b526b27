import { describe, expect, it } from 'vitest';
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
  AppendRequest,
  EventStore,
  FenceStore,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
} from '../event-store.js';
import type { LeaseStore } from '../lease-store.js';

/** Every operation of `EventStore` and its optional capabilities (`appendBatch`, `transact`). */
export const eventStoreOperations = [
  'backend',
  'fences',
  'append',
  'read',
  'readAll',
  'findExecutions',
  'sendSignal',
  'readSignals',
  'claimDue',
  'unclaimDue',
  'prune',
  'subscribe',
  'verify',
  'close',
  'defaultLeaseStore',
  'appendBatch',
  'transact',
] as const;

/** One operation of `EventStore`, for {@link forwardingConformance}. */
export type EventStoreOperation = (typeof eventStoreOperations)[number];

/** What {@link forwardingConformance} needs of a decorator. */
export interface ForwardingConformanceOptions {
  /** Builds the decorator over `inner` (a recording store that answers every call with a token). */
  wrap(inner: EventStore): EventStore | Promise<EventStore>;
  /**
   * The operations the decorator changes (or does not offer): the suite checks that every other
   * one reaches the inner store unchanged. Those it changes are for the conformance sections that
   * exercise them (`eventStoreConformance(name, open, { sections })`).
   */
  changes: readonly EventStoreOperation[];
}

interface Call {
  operation: EventStoreOperation;
  args: unknown[];
}

/**
 * An inner store that records each call and answers it with a token of its own (or fails with
 * one), so a test can tell a forwarded call, its arguments and its answer by identity.
 */
class RecordingStore implements EventStore {
  readonly calls: Call[] = [];
  /** The next call fails with this (a rejected promise, or a throw for `subscribe`). */
  failure: Error | undefined;
  readonly answers = new Map<EventStoreOperation, unknown>();
  readonly backend = 'recording';
  readonly fences: FenceStore = {
    current: async () => 0,
    advance: async () => 1,
  };
  readonly leases = { recording: 'lease store' } as unknown as LeaseStore;

  #answer(operation: EventStoreOperation, args: unknown[]): Promise<never> {
    this.calls.push({ operation, args });
    const failure = this.failure;
    this.failure = undefined;
    if (failure !== undefined) return Promise.reject(failure);
    const answer = { answerOf: operation };
    this.answers.set(operation, answer);
    return Promise.resolve(answer as never);
  }

  append(envelopes: readonly EventEnvelope[], guard?: AppendGuard) {
    return this.#answer('append', [envelopes, guard]);
  }
  read(executionId: string, options?: ReadOptions) {
    return this.#answer('read', [executionId, options]);
  }
  readAll(options?: ReadAllOptions) {
    return this.#answer('readAll', [options]);
  }
  findExecutions(options: FindExecutionsOptions) {
    return this.#answer('findExecutions', [options]);
  }
  sendSignal(signal: SignalInput) {
    return this.#answer('sendSignal', [signal]);
  }
  readSignals(executionId: string, options?: ReadSignalsOptions) {
    return this.#answer('readSignals', [executionId, options]);
  }
  claimDue(nowMs: number, limit: number, options?: ClaimDueOptions) {
    return this.#answer('claimDue', [nowMs, limit, options]);
  }
  unclaimDue(executionIds: readonly string[], nowMs: number) {
    return this.#answer('unclaimDue', [executionIds, nowMs]);
  }
  prune(options: PruneOptions) {
    return this.#answer('prune', [options]);
  }
  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription {
    this.calls.push({ operation: 'subscribe', args: [options, handler] });
    const failure = this.failure;
    this.failure = undefined;
    if (failure !== undefined) throw failure;
    const answer = { answerOf: 'subscribe', close: async () => {} };
    this.answers.set('subscribe', answer);
    return answer;
  }
  verify(executionId: string) {
    return this.#answer('verify', [executionId]);
  }
  close() {
    return this.#answer('close', []);
  }
  defaultLeaseStore() {
    this.calls.push({ operation: 'defaultLeaseStore', args: [] });
    return this.leases;
  }
  appendBatch(requests: readonly AppendRequest[]) {
    return this.#answer('appendBatch', [requests]);
  }
  transact<T>(
    work: (tx: unknown) => T | Promise<T>,
    envelopes: (result: T) => readonly EventEnvelope[],
    guard?: AppendGuard,
  ) {
    return this.#answer('transact', [work, envelopes, guard]);
  }
}

const envelope: EventEnvelope = {
  executionId: 'forwarded-1',
  sequence: 0,
  type: 'test.forwarded',
  payload: { n: 1 },
};
const guard: AppendGuard = { fenceEpoch: 3 };

/** The arguments each call operation is tried with: distinct objects, so identity tells. */
function argumentsOf(operation: EventStoreOperation): unknown[] {
  switch (operation) {
    case 'append':
      return [[envelope], guard];
    case 'read':
      return ['forwarded-1', { fromSequence: 2 }];
    case 'readAll':
      return [{ afterPosition: 7, limit: 3 }];
    case 'findExecutions':
      return [{ status: 'running', limit: 5 }];
    case 'sendSignal':
      return [{ executionId: 'forwarded-1', name: 'go', payload: { n: 2 } }];
    case 'readSignals':
      return ['forwarded-1', { afterSignalId: 4 }];
    case 'claimDue':
      return [1_000, 10, { flows: [{ name: 'forwarded-flow', version: null }] }];
    case 'unclaimDue':
      return [['forwarded-1'], 1_000];
    case 'prune':
      return [{ endedBeforeMs: 1_000, executionIds: ['forwarded-1'], limit: 10 }];
    case 'subscribe':
      return [{ executionId: 'forwarded-1' }, () => {}];
    case 'verify':
      return ['forwarded-1'];
    case 'appendBatch':
      return [[{ envelopes: [envelope], guard }]];
    case 'transact':
      return [() => 1, () => [envelope], guard];
    default:
      return [];
  }
}

const calledOperations = eventStoreOperations.filter(
  (operation) => !['backend', 'fences', 'defaultLeaseStore'].includes(operation),
);

/**
 * Proves that a store decorator hands every operation it does not change to its inner store
 * unchanged: the call reaches the inner store once, with the very same arguments; its answer
 * comes back as it was; its failure passes through as the same error. Run it beside the
 * conformance sections that exercise the operations the decorator does change, instead of
 * re-running the whole conformance suite through a decorator that only forwards.
 *
 * @example
 * forwardingConformance('coalescing', {
 *   wrap: (inner) => new CoalescingEventStore(inner),
 *   changes: ['append', 'appendBatch'],
 * });
 */
export function forwardingConformance(name: string, options: ForwardingConformanceOptions): void {
  const changed = new Set<EventStoreOperation>(options.changes);
  const forwarded = eventStoreOperations.filter((operation) => !changed.has(operation));
  describe(`forwarding conformance: ${name} (changes ${options.changes.join(', ') || 'nothing'})`, () => {
    const open = async () => {
      const inner = new RecordingStore();
      const store = await options.wrap(inner);
      inner.calls.length = 0;
      return { inner, store };
    };

    it('names only operations the EventStore has', () => {
      for (const operation of options.changes) expect(eventStoreOperations).toContain(operation);
    });

    if (forwarded.includes('backend')) {
      it('backend is the inner store’s', async () => {
        const { inner, store } = await open();
        expect(store.backend).toBe(inner.backend);
      });
    }
    if (forwarded.includes('fences')) {
      it('fences are the inner store’s', async () => {
        const { inner, store } = await open();
        expect(store.fences).toBe(inner.fences);
      });
    }
    if (forwarded.includes('defaultLeaseStore')) {
      it('defaultLeaseStore is the inner store’s', async () => {
        const { inner, store } = await open();
        expect(store.defaultLeaseStore?.()).toBe(inner.leases);
      });
    }

    for (const operation of calledOperations.filter((each) => forwarded.includes(each))) {
      const call = (store: EventStore, args: unknown[]): unknown => {
        const method = (store as unknown as Record<string, unknown>)[operation];
        expect(typeof method, `the decorator offers ${operation}`).toBe('function');
        return (method as (...a: unknown[]) => unknown).apply(store, args);
      };

      it(`${operation} reaches the inner store once, with the same arguments, and its answer comes back`, async () => {
        const { inner, store } = await open();
        const args = argumentsOf(operation);
        const answer = await call(store, args);
        expect(inner.calls.map((each) => each.operation)).toEqual([operation]);
        const seen = inner.calls[0]?.args ?? [];
        expect(seen.length).toBeGreaterThanOrEqual(args.length);
        args.forEach((arg, index) => {
          expect(seen[index], `argument ${index} of ${operation}`).toBe(arg);
        });
        if (operation !== 'close') expect(answer).toBe(inner.answers.get(operation));
      });

      it(`${operation}: the inner store’s failure passes through as the same error`, async () => {
        const { inner, store } = await open();
        const failure = new Error(`${operation} failed in the inner store`);
        inner.failure = failure;
        const outcome = await (async () => call(store, argumentsOf(operation)))().then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(outcome).toBe(failure);
        expect(inner.calls.map((each) => each.operation)).toEqual([operation]);
      });
    }
  });
}
