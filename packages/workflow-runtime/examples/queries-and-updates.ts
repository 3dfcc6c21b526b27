// Queries and updates: a query reads a running execution's state without writing anything; an
// update is a journaled request the flow answers, validated before it is written and idempotent
// by its update id.
import {
  createRuntime,
  defineFlow,
  defineQuery,
  defineUpdate,
  openMemory,
} from '@loom/workflow-runtime';

const items = defineQuery<void, string[]>('items');
const addItem = defineUpdate<{ sku: string }, { count: number }>('add-item', {
  // Runs in the caller, before anything is written.
  validate: (arg) => (arg.sku.length === 0 ? 'sku is empty' : undefined),
});

const cart = defineFlow({ name: 'cart' }, async (ctx) => {
  const skus: string[] = [];
  ctx.onQuery(items, () => [...skus]);
  while (skus.length < 2) {
    const request = await ctx.waitForUpdate(addItem, { timeout: '1d' });
    if (!request.received) break;
    skus.push(request.arg.sku);
    await request.answer({ count: skus.length });
  }
  return skus;
});

const runtime = createRuntime({ backend: openMemory(), flows: [cart], timerPollMs: 20 });
const handle = await runtime.start(cart, undefined, { executionId: 'cart-1' });

await runtime
  .update(addItem, 'cart-1', { sku: '' })
  .catch((error) => console.log('refused:', error.code));
const first = await runtime.update(addItem, 'cart-1', { sku: 'apple' }, { updateId: 'req-1' });
// A retry of the same request (same updateId) writes nothing and gets the same answer.
const retried = await runtime.update(addItem, 'cart-1', { sku: 'apple' }, { updateId: 'req-1' });
console.log('answers:', first.count, retried.count);
// Answered by replaying the log in this process: nothing is written, no effect runs.
console.log('items:', (await runtime.query(items, 'cart-1')).join(', '));
await runtime.update(addItem, 'cart-1', { sku: 'pear' }, { updateId: 'req-2' });
console.log('result:', (await handle.result()).join(', '));
await runtime.shutdown();
