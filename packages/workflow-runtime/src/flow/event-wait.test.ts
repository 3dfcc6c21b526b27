// The wait registry's scans (ADR 0060) on memory, SQLite and Postgres, called directly over a
// store a kernel runtime wrote: which delivered event a wait's catch-up picks (earliest published,
// then lowest id, none from before the wait), which waits a delivery wakes (only its name's, by id
// prefix), what a failed signal does, and a cancelOn that names another event. The end-to-end
// behaviour through ctx.waitForEvent is in event-waits.test.ts.
import { ErrorCode, type Flow, InMemoryEventStore, LoomError } from '@loom/event-runtime';
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, testBackends, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import {
  cancelOnEvent,
  catchUpOnEvents,
  eventWaitFlowName,
  eventWaitId,
  wakeWaits,
} from './event-wait.js';
import { eventDispatchFlowName, type PublishedEvent } from './published-event.js';

const paid = 'shop/order.paid';

/** Stands for a wait execution: it waits for a signal (the event) and returns it. */
const waitStandIn: Flow<unknown, unknown> = {
  name: eventWaitFlowName,
  run: async (ctx) => ctx.waitForSignal('loom.event'),
};
/** Stands for a delivery execution of `paid` (its input is the event): it does nothing. */
const deliveryStandIn: Flow<unknown, unknown> = {
  name: eventDispatchFlowName(paid),
  run: async () => null,
};

/** A store error that is not EXECUTION_SETTLED, as a signal's write might throw it. */
const storeDown = () => new LoomError(ErrorCode.STORE_UNAVAILABLE, 'the database went away');

for (const [backend, open] of testBackends('waitscan')) {
  describe(`wait scans on ${backend}`, () => {
    const cleanups = cleanupsAfterEach();
    const make = async () => {
      const clock = new ManualClock();
      const made = await open(clock);
      const kernel = createKernelRuntime({
        store: made.store,
        clock,
        flows: [waitStandIn, deliveryStandIn],
        inlineWaitMs: 0,
        timerPollMs: 0,
        recoverEveryMs: 0,
      });
      cleanups.push(async () => {
        await kernel.shutdown();
        await made.drop();
        await made.store.close();
      });
      const signal = (
        executionId: string,
        name: string,
        payload: unknown,
        options: { idempotencyKey: string },
      ) => kernel.signal(executionId, name, payload as never, options);
      /** Starts a wait stand-in `id` for `input` and resolves once it suspended. */
      const startWait = async (id: string, input: object) => {
        await kernel.start(waitStandIn, input, { executionId: id });
        await until(`${id} suspends`, async () =>
          (await made.store.read(id)).some((event) => event.type === 'execution.suspended'),
        );
      };
      /** A delivery `id` of `event`, written now (the clock's time). */
      const deliver = async (id: string, event: Partial<PublishedEvent> & { id: string }) => {
        const handle = await kernel.start(
          deliveryStandIn,
          { name: paid, data: { orderId: 'o-1' }, publishedAtMs: clock.now(), ...event },
          { executionId: id },
        );
        await handle.result();
      };
      return { store: made.store, clock, kernel, signal, startWait, deliver };
    };

    it("a catch-up picks the earliest published matching event since the wait's start, then the lowest id", async () => {
      const { store, clock, signal, startWait, deliver } = await make();
      const sinceMs = clock.now();
      const waitId = eventWaitId(paid, 'parent', 0);
      const input = { event: paid, match: { 'data.orderId': 'o-1' }, timeoutMs: null };
      await startWait(waitId, input);
      await clock.advance(100);
      // Delivery ids are scanned in this order; the events' times and ids say which comes first.
      await deliver('d-a', { id: 'e-9', publishedAtMs: sinceMs + 20 });
      await deliver('d-b', { id: 'e-5', publishedAtMs: sinceMs + 10 });
      await deliver('d-c', { id: 'e-3', publishedAtMs: sinceMs + 10 });
      await deliver('d-d', { id: 'e-4', publishedAtMs: sinceMs + 10 });
      // Published before the wait started (delivered after): never the wait's.
      await deliver('d-e', { id: 'e-1', publishedAtMs: sinceMs - 5 });
      // Another order, and an event of another name in the same flow's delivery: not matching.
      await deliver('d-f', { id: 'e-2', publishedAtMs: sinceMs + 1, data: { orderId: 'o-2' } });
      await deliver('d-g', { id: 'e-0', publishedAtMs: sinceMs + 1, name: 'shop/other' });
      expect(await catchUpOnEvents({ store, signal }, waitId, input)).toBe('e-3');
      const signals = await store.readSignals(waitId);
      expect(signals.map((sent) => [sent.name, sent.idempotencyKey])).toEqual([
        ['loom.event', 'e-3'],
      ]);
      expect(signals[0]?.payload).toMatchObject({ id: 'e-3', publishedAtMs: sinceMs + 10 });
      // Run again (a retried step): the same signal, idempotent by the event's id.
      expect(await catchUpOnEvents({ store, signal }, waitId, input)).toBe('e-3');
      expect(await store.readSignals(waitId)).toHaveLength(1);
    });

    it('a catch-up of a wait with no log finds nothing; a settled wait is not an error, a store error is', async () => {
      const { store, kernel, clock, signal, startWait, deliver } = await make();
      const input = { event: paid, match: {}, timeoutMs: null };
      expect(await catchUpOnEvents({ store, signal }, 'loom.wait:nowhere', input)).toBeNull();
      const waitId = eventWaitId(paid, 'parent', 1);
      await startWait(waitId, input);
      expect(await catchUpOnEvents({ store, signal }, waitId, input)).toBeNull();
      await clock.advance(10);
      await deliver('d-1', { id: 'e-1' });
      const failing = { store, signal: async () => Promise.reject(storeDown()) };
      await expect(catchUpOnEvents(failing, waitId, input)).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
      expect(await kernel.cancel(waitId, 'its parent was cancelled')).toBe(true);
      // Settled since: the event is still the one found, and nothing is sent.
      expect(await catchUpOnEvents({ store, signal }, waitId, input)).toBe('e-1');
      expect(await store.readSignals(waitId)).toEqual([]);
    });

    it("a delivery wakes only its name's waits and stops at the first id outside the prefix", async () => {
      const { store, clock, signal, startWait } = await make();
      const match = { 'data.orderId': 'o-1' };
      const mine = eventWaitId(paid, 'p', 0);
      // 'shop/order.paidx' waits sort right after 'shop/order.paid' ones.
      const longer = eventWaitId(`${paid}x`, 'p', 0);
      expect(longer > mine).toBe(true);
      await startWait(mine, { event: paid, match, timeoutMs: null });
      await startWait(longer, { event: `${paid}x`, match, timeoutMs: null });
      await clock.advance(10);
      const event = {
        name: paid,
        id: 'e-1',
        data: { orderId: 'o-1' },
        publishedAtMs: clock.now(),
      };
      const cancel = async () => false;
      expect(await wakeWaits({ store, signal, cancel }, event)).toBe(1);
      expect((await store.readSignals(mine)).map((sent) => sent.idempotencyKey)).toEqual(['e-1']);
      expect(await store.readSignals(longer)).toEqual([]);
      // A signal that fails for another reason than a settled wait fails the delivery.
      const failing = { store, signal: async () => Promise.reject(storeDown()), cancel };
      await expect(wakeWaits(failing, { ...event, id: 'e-2' })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    });

    it('a flow without a cancelOn for the event cancels nothing', async () => {
      const { store, signal } = await make();
      const cancelled: string[] = [];
      const cancel = async (executionId: string) => {
        cancelled.push(executionId);
        return true;
      };
      const event = { name: paid, id: 'e-1', data: null, publishedAtMs: Date.now() };
      const plain = defineFlow({ name: 'plain' }, async () => null);
      const other = defineFlow(
        { name: 'other', cancelOn: [{ event: 'shop/order.refunded' }] },
        async () => null,
      );
      for (const flow of [plain, other]) {
        expect(await cancelOnEvent({ store, signal, cancel }, flow as never, event)).toBe(0);
      }
      expect(cancelled).toEqual([]);
    });
  });
}

describe('a catch-up over more deliveries than one page', () => {
  it('reads on past the first page and finds a match only the second page has', async () => {
    const clock = new ManualClock();
    const store = new InMemoryEventStore({ clock });
    const kernel = createKernelRuntime({
      store,
      clock,
      flows: [waitStandIn, deliveryStandIn],
      inlineWaitMs: 0,
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    try {
      const waitId = eventWaitId(paid, 'parent', 0);
      const input = { event: paid, match: { 'data.orderId': 'wanted' }, timeoutMs: null };
      await kernel.start(waitStandIn, input, { executionId: waitId });
      await clock.advance(1);
      // 500 deliveries of other orders (one page), then the one the wait matches.
      for (let n = 0; n < 501; n++) {
        const orderId = n === 500 ? 'wanted' : `other-${n}`;
        await kernel.start(
          deliveryStandIn,
          { name: paid, id: `e-${n}`, data: { orderId }, publishedAtMs: clock.now() },
          { executionId: `d-${String(n).padStart(3, '0')}` },
        );
      }
      const signal = (
        id: string,
        name: string,
        payload: unknown,
        options: { idempotencyKey: string },
      ) => kernel.signal(id, name, payload as never, options);
      expect(await catchUpOnEvents({ store, signal }, waitId, input)).toBe('e-500');
    } finally {
      await kernel.shutdown();
      await store.close();
    }
  });
});
