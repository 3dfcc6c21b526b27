// Today's code, changed under runs in flight: the first step was renamed.
import { defineFlow } from '@loom/workflow-runtime';

export const order = defineFlow({ name: 'order' }, async (ctx, input) => {
  const priced = await ctx.step('quote', () => ({ id: input.id, total: 42 }));
  return ctx.step('receipt', () => ({ ...priced, paid: true }));
});

export const waiter = defineFlow({ name: 'waiter' }, async (ctx) => {
  await ctx.step('get-ready', () => 'ready');
  const got = await ctx.waitForSignal('go');
  return got.received;
});
