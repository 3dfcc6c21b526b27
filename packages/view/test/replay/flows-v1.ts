// The order flow as deployed, written in TypeScript (`--flows` loads it through tsx): the same
// steps and results as flows-v1.mjs, so it fits the same log. Its step results come from a
// TypeScript neighbour, to show that the module's own imports of .ts files load too.
import { defineFlow } from '@loom/workflow-runtime';
import { priceOf } from './pricing.js';

export const order = defineFlow({ name: 'order' }, async (ctx, input: { id: string }) => {
  const priced = await ctx.step('price', () => priceOf(input.id));
  return ctx.step('receipt', () => ({ ...priced, paid: true }));
});
