// A wait catches up on events delivered before its start was in the index (ADR 0060, "A wait
// catches up"), on memory, SQLite and Postgres: a wait whose start write is held (a store busy,
// the write sent again later with its earlier time) while a matching event is published and
// delivered still takes that event; and a wait started by a node of the release before the wait
// flow had versions (unversioned, no catch-up step) replays and is woken here.
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import { describe, expect, it } from 'vitest';
import { sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { eventWaitFlowName, eventWaitId, legacyEventWaitFlow } from './event-wait.js';
import { createRuntime } from './flow-runtime.js';
import { HeldWaitStart } from './held-wait-start.test-support.js';
import { eventsQueue } from './published-event.js';

const databases = sharedDatabases('wait-catch-up');

const checkout = defineFlow(
  { name: 'checkout', waitsForEvents: ['shop/order.paid'] },
  async (ctx, input: { orderId: string; timeout: string }) => {
    const paid = await ctx.waitForEvent<{ orderId: string }>('shop/order.paid', {
      match: { 'data.orderId': input.orderId },
      timeout: input.timeout,
    });
    return paid.received ? `${paid.event.id}:${paid.event.data.orderId}` : 'timed out';
  },
);

for (const [name, make] of databases) {
  describe(`a wait catches up on ${name}`, () => {
    it('a wait whose start write was held while a matching event was delivered still takes it', async () => {
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      let release: () => void = () => undefined;
      const store = new HeldWaitStart(
        a.events,
        new Promise<void>((resolve) => {
          release = resolve;
        }),
      );
      // The waiter's store holds the wait's start; it delivers nothing itself.
      const waiter = createRuntime({
        store,
        leases: a.leases,
        queues: a.queues,
        flows: [checkout],
        eventDelivery: false,
        timerPollMs: 20,
      });
      const deliverer = createRuntime({
        backend: b,
        closeBackend: false,
        flows: [checkout],
        eventDelivery: { pollMs: 20 },
        timerPollMs: 20,
      });
      try {
        const handle = await waiter.start(
          checkout,
          { orderId: 'o-1', timeout: '4s' },
          { executionId: 'c-1' },
        );
        await store.held;
        // Published and delivered while the wait's start is not in the index: the delivery's scan
        // finds no wait to wake.
        await deliverer.publish({ name: 'shop/order.paid', id: 'p-1', data: { orderId: 'o-1' } });
        const delivery = `queue:${eventsQueue}:p-1`;
        await until('the event is being delivered', async () =>
          deliverer.status(delivery).then(
            () => true,
            () => false,
          ),
        );
        expect(await deliverer.attach(delivery).result()).toEqual([]);
        release();
        // The wait's own catch-up finds the delivered event (without it: 'timed out' after 4 s).
        expect(await handle.result()).toBe('p-1:o-1');
        const waits = await deliverer.store.findExecutions({ flow: eventWaitFlowName });
        expect(waits.map((wait) => wait.version)).toEqual(['2']);
        const [wait] = waits;
        const signals = await deliverer.store.readSignals(wait?.executionId as string);
        expect(signals.map((signal) => signal.idempotencyKey)).toEqual(['p-1']);
      } finally {
        release();
        await waiter.shutdown();
        await deliverer.shutdown();
        if (b !== a) await b.close();
        await a.close();
        await database.drop();
      }
    });

    it('a wait an older node started (unversioned, no catch-up) replays and is woken here', async () => {
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      const waitId = eventWaitId('shop/order.paid', 'old-parent', 0);
      // A node of the release before versions starts a wait, and goes away once it suspended.
      const old = createKernelRuntime({
        store: a.events,
        leases: a.leases,
        inlineWaitMs: 0,
        timerPollMs: 0,
        flows: [legacyEventWaitFlow as never],
      });
      await old.start(
        legacyEventWaitFlow as never,
        { event: 'shop/order.paid', match: { 'data.orderId': 'o-2' }, timeoutMs: null },
        { executionId: waitId },
      );
      await until('the old wait suspended', async () =>
        (await a.events.read(waitId)).some((event) => event.type === 'execution.suspended'),
      );
      await old.shutdown();
      const runtime = createRuntime({
        backend: b,
        closeBackend: false,
        flows: [checkout],
        eventDelivery: { pollMs: 20 },
        timerPollMs: 20,
      });
      try {
        await runtime.publish({ name: 'shop/order.paid', id: 'p-2', data: { orderId: 'o-2' } });
        const received = await runtime
          .attach<{ received: boolean; event?: { id: string } }>(waitId)
          .result();
        expect(received).toMatchObject({ received: true, event: { id: 'p-2' } });
        const steps = (await b.events.read(waitId)).filter(
          (event) => event.type === 'step.started',
        );
        expect(steps).toEqual([]);
      } finally {
        await runtime.shutdown();
        if (b !== a) await b.close();
        await a.close();
        await database.drop();
      }
    });
  });
}
