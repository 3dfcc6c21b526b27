import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';

const order = defineFlow({ name: 'order' }, async (ctx) => ctx.step('pay', () => 'paid'));
const runtime = createRuntime({ backend: openMemory(), flows: [order] });
await (await runtime.start(order, null)).result();
const { executions, nextCursor } = await runtime.findExecutions({ flow: order, status: 'completed' });
for (const { id, version, updatedAtMs } of executions) console.log(id, version, updatedAtMs);
console.log(nextCursor); // undefined: that was the last page
await runtime.shutdown();

export {};
