// The flows of the replay test as they were deployed (a plain ES module, as `--flows` takes).
import { defineFlow } from '@loom/workflow-runtime';

export const order = defineFlow({ name: 'order' }, async (ctx, input) => {
  const priced = await ctx.step('price', () => ({ id: input.id, total: 42 }));
  return ctx.step('receipt', () => ({ ...priced, paid: true }));
});

export const waiter = defineFlow({ name: 'waiter' }, async (ctx) => {
  await ctx.step('prepare', () => 'ready');
  const got = await ctx.waitForSignal('go');
  return got.received;
});
