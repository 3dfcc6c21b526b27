// The flow of the update crash test (ADR 0061): it takes `add-item` updates; before answering
// each it runs a step `hold-<updateId>` whose effect, in a worker started `doomed`, prints
// `holding <updateId>` and never returns, so the test SIGKILLs that worker with the update taken
// (its `signal.received` and the step's start durable) and unanswered.
import { defineFlow, defineQuery, defineUpdate } from '../../src/index.js';

export const addItem = defineUpdate<{ sku: string }, { count: number; by: number }>('add-item');
export const itemCount = defineQuery<void, number>('item-count');

export function cartFlow(mode: 'doomed' | 'fresh' | 'caller') {
  return defineFlow({ name: 'update-cart' }, async (ctx) => {
    const items: string[] = [];
    ctx.onQuery(itemCount, () => items.length);
    for (;;) {
      const request = await ctx.waitForUpdate(addItem);
      if (!request.received) continue;
      const by = await ctx.step(`hold-${request.updateId}`, () => {
        if (mode !== 'doomed') return process.pid;
        process.stdout.write(`holding ${request.updateId}\n`);
        return new Promise<number>(() => undefined);
      });
      items.push(request.arg.sku);
      await request.answer({ count: items.length, by });
    }
  });
}
