// Today's code, changed: the same steps, but the run now ends with another output.
import { defineFlow } from '@loom/workflow-runtime';

export const flows = [
  defineFlow({ name: 'order' }, async (ctx, input) => {
    const priced = await ctx.step('price', () => ({ id: input.id, total: 42 }));
    await ctx.step('receipt', () => ({ ...priced, paid: true }));
    return { id: priced.id, paid: 'yes' };
  }),
];
