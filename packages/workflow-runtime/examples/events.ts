// Runs started by events (ADR 0060): a flow declares the event name that starts it, a filter, and
// the key that makes its run unique; `runtime.publish` stores the event and every triggered flow
// starts once, as `event:<flow>:<key>`, whoever delivers it and however often it is published.
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

const runtime = createRuntime({ backend: openMemory(), flows: [receipt] });
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
await runtime.shutdown();
