// Runs started by events (ADR 0060): a flow declares the event name that starts it, a filter, and
// the key that makes its run unique; `runtime.publish` stores the event and every triggered flow
// starts once, as `event:<len>:<flow>:<key>`, whoever delivers it and however often it is published.
// A running flow can also wait for an event (`ctx.waitForEvent`) or be cancelled by one (`cancelOn`).
import {
  createRuntime,
  defineFlow,
  eventRunId,
  openMemory,
  type PublishedEvent,
} from '@loom/workflow-runtime';

type OrderPlaced = PublishedEvent<{ orderId: string; total: number }>;

const receipt = defineFlow(
  {
    name: 'send-receipt',
    trigger: {
      event: 'shop/order.placed',
      // Only orders worth a receipt; the run's id is the order's, so a re-sent event is no new run.
      if: (event: OrderPlaced) => event.data.total > 0,
      idempotency: (event) => event.data.orderId,
    },
  },
  async (ctx, event) =>
    ctx.step('mail', () => `receipt for ${event.data.orderId}: ${event.data.total}`),
);

// Waits for the payment of its order for up to a day; cancelled if the order is cancelled first.
const fulfil = defineFlow(
  {
    name: 'fulfil',
    waitsForEvents: ['shop/order.paid'],
    cancelOn: [{ event: 'shop/order.cancelled', match: { 'data.orderId': 'input.orderId' } }],
  },
  async (ctx, input: { orderId: string }) => {
    const paid = await ctx.waitForEvent<{ amount: number }>('shop/order.paid', {
      match: { 'data.orderId': input.orderId },
      timeout: '1d',
    });
    if (!paid.received) return `${input.orderId}: not paid in time`;
    return ctx.step('ship', () => `${input.orderId}: shipped, paid ${paid.event.data.amount}`);
  },
);

const runtime = createRuntime({ backend: openMemory(), flows: [receipt, fulfil] });
await runtime.publish({
  name: 'shop/order.placed',
  id: 'evt-1',
  data: { orderId: 'o-7', total: 42 },
});
// The same event again (same id), and a second event about the same order: neither starts a run.
const again = await runtime.publish({
  name: 'shop/order.placed',
  id: 'evt-1',
  data: { orderId: 'o-7', total: 42 },
});
await runtime.publish({
  name: 'shop/order.placed',
  id: 'evt-2',
  data: { orderId: 'o-7', total: 42 },
});
console.log(`duplicate: ${again.duplicate}`);

const runId = eventRunId('send-receipt', 'o-7');
while ((await runtime.queueStats('loom.events')).completed < 2) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
console.log(await runtime.attach(runId).result());
const runs = await runtime.findExecutions({ flow: receipt });
console.log(`runs: ${runs.executions.map((run) => run.id).join(', ')}`);

// Two orders waiting for their payment: o-8 is paid, o-9 is cancelled.
const paidOrder = await runtime.start(fulfil, { orderId: 'o-8' });
const cancelledOrder = await runtime.start(fulfil, { orderId: 'o-9' });
// The waits start in the background: publish once both are registered (an event published before
// a wait started is not for it).
while ((await runtime.findExecutions({ flow: 'loom.event-wait' })).executions.length < 2) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await runtime.publish({ name: 'shop/order.paid', data: { orderId: 'o-8', amount: 42 } });
await runtime.publish({ name: 'shop/order.cancelled', data: { orderId: 'o-9' } });
console.log(await paidOrder.result());
console.log(await cancelledOrder.result().catch((error) => error.code));
await runtime.shutdown();
