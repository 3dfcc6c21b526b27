// Steps with retries and a timeout, on the embedded SQLite store.
import { createRuntime, defineFlow, TerminalError } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';

let calls = 0;
const charge = defineFlow(
  { name: 'charge', version: '1' },
  async (ctx, order: { id: string; cents: number }) => {
    const receipt = await ctx.step(
      'charge-card',
      async (effect) => {
        calls += 1;
        if (order.cents <= 0) throw new TerminalError('nothing to charge'); // never retried
        if (effect.attempt < 3) throw new Error('payment service busy'); // retried with backoff
        return `receipt for ${order.id} (key ${effect.idempotencyKey}, attempt ${effect.attempt})`;
      },
      { retry: { attempts: 5, backoff: { initialMs: 10 } }, timeout: '5s' },
    );
    return receipt;
  },
);

const runtime = createRuntime({
  backend: openSqlite({ path: ':memory:', migrate: true }),
  flows: [charge],
});
const handle = await runtime.start(charge, { id: 'order-7', cents: 1200 });
console.log(await handle.result(), `after ${calls} calls`);
await runtime.shutdown();
