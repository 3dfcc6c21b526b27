// Queues: priorities, a global concurrency limit (across processes), per-partition limits,
// rate limits and dedupe keys. Each item runs as a durable execution `queue:<queue>:<itemId>`.
import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';

const order: string[] = [];
const sendEmail = defineFlow({ name: 'send-email' }, async (ctx, to: string) =>
  ctx.step('deliver', () => {
    order.push(to);
    return `sent to ${to}`;
  }),
);

const runtime = createRuntime({
  backend: openMemory(),
  flows: [sendEmail],
});
await runtime.enqueue('emails', sendEmail, 'newsletter@example.com', { priority: 0 });
await runtime.enqueue('emails', sendEmail, 'ceo@example.com', {
  priority: 10,
  partitionKey: 'vip',
});
const first = await runtime.enqueue('emails', sendEmail, 'cto@example.com', {
  priority: 5,
  dedupeKey: 'cto-weekly',
});
const duplicate = await runtime.enqueue('emails', sendEmail, 'cto@example.com', {
  dedupeKey: 'cto-weekly',
});
console.log('dedupe:', duplicate.duplicate, duplicate.itemId === first.itemId);

const worker = runtime.work('emails', {
  concurrencyMax: 1,
  partitionConcurrencyMax: 1,
  rate: { count: 100, windowMs: 60_000 },
  pollMs: 20,
});
while (order.length < 3) await new Promise((resolve) => setTimeout(resolve, 20));
await worker.stop();
console.log('ran in priority order:', order.join(', '));
await runtime.shutdown();
