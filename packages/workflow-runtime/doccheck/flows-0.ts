import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';

const order = defineFlow({ name: 'order', version: '2' }, async (ctx, input: { id: string }) =>
  ctx.step('receipt', () => ({ orderId: input.id, total: 42 })),
);
const runtime = createRuntime({ backend: openMemory(), flows: [order] });
const handle = await runtime.start(order, { id: '7' }, { executionId: 'order-7' });
console.log(await handle.result()); // { orderId: '7', total: 42 }
await runtime.shutdown();

export {};
