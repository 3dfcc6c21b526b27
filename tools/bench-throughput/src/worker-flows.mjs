// The flow `bench:workers` runs on `loom worker` processes (a plain ES module, as `--flows`
// takes): three steps that do no I/O of their own, so what is measured is the runtime, the queue
// and the store.
import { defineFlow } from '@loom/workflow-runtime';

export const job = defineFlow({ name: 'job' }, async (ctx, input) => {
  const a = await ctx.step('a', () => input.n);
  const b = await ctx.step('b', () => a * 2);
  return ctx.step('c', () => b + 1);
});
