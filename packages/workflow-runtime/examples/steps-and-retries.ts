// Steps with durable retries and a timeout, a failure that says where it happened, and a retry
// of the failed execution, on the embedded SQLite store.
import {
  createRuntime,
  defineFlow,
  type ExecutionFailedFields,
  isLoomError,
  terminalError,
} from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';

let calls = 0;
const charge = defineFlow(
  { name: 'charge', version: '1' },
  async (ctx, order: { id: string; cents: number }) => {
    const receipt = await ctx.step(
      'charge-card',
      async (effect) => {
        calls += 1;
        if (order.cents <= 0) throw terminalError('nothing to charge'); // never retried
        if (effect.attempt < 3) throw new Error('payment service busy'); // retried with backoff
        return `receipt for ${order.id} (key ${effect.idempotencyKey}, attempt ${effect.attempt})`;
      },
      { retry: { attempts: 5, backoff: { initialMs: 10 } }, timeout: '5s' },
    );
    return receipt;
  },
);

let gatewayUp = false;
const refund = defineFlow({ name: 'refund' }, async (ctx, orderId: string) => {
  const order = await ctx.step('load-order', () => ({ id: orderId, cents: 1200 }));
  // A decision over what the flow has: recorded (a replay keeps it), with no barrier of its own.
  const route = await ctx.record('route', () => (order.cents > 1000 ? 'manual' : 'auto'));
  // No `retry` here: the runtime's `stepRetry` applies.
  return ctx.step('refund-card', () => {
    if (!gatewayUp) throw new Error('refund gateway down');
    return `refunded ${order.cents} on ${order.id} (${route})`;
  });
});

const runtime = createRuntime({
  backend: openSqlite({ path: ':memory:', migrate: true }),
  flows: [charge, refund],
  stepRetry: { attempts: 2, backoff: { initialMs: 10 } },
});
const handle = await runtime.start(charge, { id: 'order-7', cents: 1200 });
console.log(await handle.result(), `after ${calls} calls`);

const refunding = await runtime.start(refund, 'order-7', { executionId: 'refund-7' });
try {
  await refunding.result();
} catch (error) {
  if (!isLoomError(error)) throw error;
  const { step, attempts, error: cause } = error.fields as unknown as ExecutionFailedFields;
  console.log(`${error.code}: step '${step}' after ${attempts} attempts: ${cause.message}`);
}
gatewayUp = true; // the fix is deployed: run it again from the failed step
const retried = await runtime.retry('refund-7');
console.log(await retried.result());
await runtime.shutdown();
