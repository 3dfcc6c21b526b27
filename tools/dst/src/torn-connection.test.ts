import {
  ErrorCode,
  InMemoryEventStore,
  InMemoryLeaseStore,
  isLoomError,
} from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import type { Faults } from './faults.js';
import { Recorder } from './internal/recorder.js';
import { StoreLink } from './internal/store-link.js';
import { NodeClock } from './node-clock.js';
import { seededRandom } from './seeded-random.js';
import { SimEventStore } from './sim-event-store.js';
import { SimLeaseStore } from './sim-lease-store.js';

const reconnectMs = 1_000;

/** One node's event-store handle whose next call tears its connection (then no more tears). */
function tearingStore(seed: number) {
  const shared = new ManualClock();
  const inner = new InMemoryEventStore({ clock: shared });
  const recorder = new Recorder();
  const faults: Faults = {
    storeLatencyMs: [0, 0],
    transientError: 0,
    lostAck: 0,
    tornConnection: 1,
    reconnectMs: [reconnectMs, reconnectMs],
  };
  const link = new StoreLink(
    'node-0.0',
    new NodeClock(shared),
    shared,
    seededRandom(seed),
    faults,
    recorder,
  );
  const store = new SimEventStore(inner, link, undefined);
  const innerLeases = new InMemoryLeaseStore({ clock: shared });
  // The lease store's calls travel on the same connection.
  const leases = new SimLeaseStore(innerLeases, link);
  const stopTearing = () => {
    faults.tornConnection = 0;
  };
  return { shared, inner, recorder, store, innerLeases, leases, stopTearing };
}

const envelope = (executionId: string) => ({
  executionId,
  sequence: 0,
  type: 'execution.started',
  payload: { flow: 'torn' },
});

async function codeOf(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => 'no error',
    (caught: unknown) => caught,
  );
  return isLoomError(error) ? error.code : String(error);
}

describe('torn connections', () => {
  it('a torn append is STORE_UNAVAILABLE with its outcome unknown: sometimes committed, sometimes not, never acknowledged', async () => {
    const outcomes = new Set<string>();
    for (let seed = 1; seed <= 20; seed++) {
      const { inner, recorder, store } = tearingStore(seed);
      expect(await codeOf(store.append([envelope('e')]))).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(recorder.faults.tornConnections).toBe(1);
      const written = await inner.read('e');
      // What the recorder saw committed is exactly what the log holds; the caller got no ack.
      expect(recorder.committed.length).toBe(written.length);
      expect(recorder.acked.size).toBe(0);
      outcomes.add(written.length === 1 ? 'committed' : 'not committed');
    }
    expect([...outcomes].sort()).toEqual(['committed', 'not committed']);
  });

  it('after a tear every call is refused until the reconnect delay has passed on the virtual clock', async () => {
    const { shared, inner, recorder, store, innerLeases, leases, stopTearing } = tearingStore(7);
    await codeOf(store.append([envelope('first')]));
    stopTearing();
    const before = (await inner.readAll()).length;
    // Refused before they reach the store: nothing is written, nothing read.
    expect(await codeOf(store.append([envelope('second')]))).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(await codeOf(store.read('first'))).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(await codeOf(store.fences.advance('first'))).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(await inner.read('second')).toEqual([]);
    // The lease store shares the connection: refused too, no lease taken.
    expect(await codeOf(leases.acquireMany('node-0.0', ['first'], 3_000))).toBe(
      ErrorCode.STORE_UNAVAILABLE,
    );
    expect(await innerLeases.get('first')).toBeUndefined();
    expect(recorder.faults.refusedWhileReconnecting).toBe(4);
    await shared.advance(reconnectMs - 1);
    expect(await codeOf(store.findExecutions({}))).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(recorder.faults.refusedWhileReconnecting).toBe(5);
    await shared.advance(1);
    // Reconnected: calls reach the store again.
    const stored = await store.append([envelope('second')]);
    expect(stored.map((event) => event.executionId)).toEqual(['second']);
    expect((await inner.readAll()).length).toBe(before + 1);
    expect(await leases.acquireMany('node-0.0', ['first'], 3_000)).toEqual(new Set(['first']));
    expect(recorder.faults.tornConnections).toBe(1);
  });

  it('a torn lease acquire leaves the caller unsure: sometimes the lease was taken, sometimes not', async () => {
    const outcomes = new Set<string>();
    for (let seed = 1; seed <= 20; seed++) {
      const { innerLeases, leases } = tearingStore(seed);
      expect(await codeOf(leases.acquireMany('node-0.0', ['x'], 3_000))).toBe(
        ErrorCode.STORE_UNAVAILABLE,
      );
      outcomes.add((await innerLeases.get('x')) === undefined ? 'not taken' : 'taken');
    }
    expect([...outcomes].sort()).toEqual(['not taken', 'taken']);
  });

  it('a read torn mid-page is an error, never a partial page', async () => {
    const { inner, store } = tearingStore(3);
    await inner.append([envelope('r')]);
    const error = await store.read('r').then(
      (page) => page,
      (caught: unknown) => caught,
    );
    expect(isLoomError(error, ErrorCode.STORE_UNAVAILABLE)).toBe(true);
    expect((error as Error).message).toContain('the connection tore');
  });
});
