// A subscription whose store cannot be read for a while (a restart, a failover) keeps its place
// and reads again with backoff on the store's clock; a read error that is not transient ends it
// through onError. Driven on the in-memory store through the testing kit's FlakyEventStore (its
// reads fail as a lost connection's do) and a ManualClock, so the backoff is exact: the Postgres
// fault suites reach this path only when a kill lands during a read.
import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import { FlakyEventStore } from '../testing/flaky-event-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { StoreSubscriptions } from './store-subscriptions.js';

function setUp() {
  const clock = new ManualClock();
  const memory = new InMemoryEventStore({ clock });
  const flaky = new FlakyEventStore(memory);
  // The backend's append notifications, raised by the test after each append.
  const wakes = new Set<() => void>();
  const subscriptions = new StoreSubscriptions(flaky, {
    watch: (_executionId, wake) => {
      wakes.add(wake);
      return () => wakes.delete(wake);
    },
    pollIntervalMs: 0,
    clock,
  });
  const append = async (sequence: number) => {
    await memory.append([
      { executionId: 'e1', sequence, type: 'step.started', payload: { index: sequence } },
    ]);
    for (const wake of wakes) wake();
  };
  return { clock, flaky, subscriptions, append };
}

/** Lets the pump's promise chain settle (reads and handler calls are a few microtasks). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('SubscriptionPump', () => {
  it('reads again after 50, then 100 ms while the store is unavailable, delivers from where it was, and starts the backoff over after a read succeeds', async () => {
    const { clock, flaky, subscriptions, append } = setUp();
    await append(0);
    flaky.failNext({ reads: 3 });
    const seen: number[] = [];
    const errors: unknown[] = [];
    const subscription = subscriptions.subscribe(
      { executionId: 'e1', onError: (error) => errors.push(error) },
      (batch: StoredEvent[]) => {
        seen.push(...batch.map((event) => event.sequence));
      },
    );
    await settle();
    expect(flaky.failed.reads).toBe(1);
    expect(clock.delaysMs).toEqual([50]);
    // Appended while the store is down: a wake-up meanwhile reads at once (and fails again) but
    // neither arms a second retry nor lengthens the backoff.
    await append(1);
    await settle();
    expect(flaky.failed.reads).toBe(2);
    expect(clock.delaysMs).toEqual([50]); // one pending retry, not two
    await clock.advance(50);
    await settle();
    expect(flaky.failed.reads).toBe(3);
    expect(clock.delaysMs).toEqual([50, 100]);
    expect(seen).toEqual([]);
    await clock.advance(100);
    await settle();
    expect(seen).toEqual([0, 1]);
    expect(errors).toEqual([]);

    // Up again and failing again: the backoff starts from 50 ms.
    flaky.failNext({ reads: 1 });
    await append(2);
    await settle();
    expect(clock.delaysMs.at(-1)).toBe(50);
    await clock.advance(50);
    await settle();
    expect(seen).toEqual([0, 1, 2]);
    expect(errors).toEqual([]);
    await subscription.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('waits at most 5 s between two reads however long the store stays down', async () => {
    const { clock, flaky, subscriptions, append } = setUp();
    await append(0);
    flaky.failNext({ reads: 10 });
    const seen: number[] = [];
    const subscription = subscriptions.subscribe({ executionId: 'e1' }, (batch) => {
      seen.push(...batch.map((event) => event.sequence));
    });
    for (let failures = 1; failures <= 10; failures++) {
      await settle();
      expect(flaky.failed.reads).toBe(failures);
      await clock.advance(clock.delaysMs.at(-1) as number);
    }
    await settle();
    expect(clock.delaysMs).toEqual([50, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000]);
    expect(seen).toEqual([0]);
    await subscription.close();
  });

  it('a close while a retry is pending cancels it: nothing is read after the close', async () => {
    const { clock, flaky, subscriptions, append } = setUp();
    await append(0);
    flaky.failNext({ reads: 1 });
    const subscription = subscriptions.subscribe({ executionId: 'e1' }, () => {
      throw new Error('no batch may reach a closed subscription');
    });
    await settle();
    expect(clock.pendingTimers).toBe(1);
    await subscription.close();
    expect(clock.pendingTimers).toBe(0);
    const reads = flaky.counts.reads;
    await clock.advance(60_000);
    await settle();
    expect(flaky.counts.reads).toBe(reads);
  });

  it('a read error that is not transient ends the subscription through onError', async () => {
    const clock = new ManualClock();
    const memory = new InMemoryEventStore({ clock });
    const broken = new LoomError(ErrorCode.INVALID_ARGUMENT, 'the store refused the read');
    const subscriptions = new StoreSubscriptions(
      {
        read: () => Promise.reject(broken),
        readAll: (options) => memory.readAll(options),
      },
      { watch: () => () => undefined, pollIntervalMs: 0, clock },
    );
    const errors: unknown[] = [];
    subscriptions.subscribe({ executionId: 'e1', onError: (error) => errors.push(error) }, () => {
      throw new Error('no batch was readable');
    });
    await settle();
    expect(errors).toEqual([broken]);
    expect(clock.pendingTimers).toBe(0);
  });
});
