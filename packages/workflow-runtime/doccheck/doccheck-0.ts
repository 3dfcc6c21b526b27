import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';

// Stand-ins for your own services.
async function reserveStock(sku: string): Promise<string> {
  return `reservation-${sku}`;
}
async function chargeCard(reservation: string, options: { idempotencyKey: string }): Promise<void> {
  console.log(`charging for ${reservation} (key ${options.idempotencyKey})`);
}

const order = defineFlow({ name: 'order' }, async (ctx, input: { sku: string }) => {
  const reservation = await ctx.step('reserve', () => reserveStock(input.sku));
  await ctx.step('charge', (effect) =>
    chargeCard(reservation, { idempotencyKey: effect.idempotencyKey }),
  );
  return `order for ${input.sku} placed`;
});

// One call opens the log and everything beside it (leases, snapshots, queues) in one file.
const backend = openSqlite({ path: 'loom.db', migrate: true });
const runtime = createRuntime({ backend, flows: [order] });
await runtime.recover(); // on boot: resume what a crashed process left behind

const handle = await runtime.start(order, { sku: 'loom-1' }, { executionId: 'order-42' });
console.log(await handle.result());
await runtime.shutdown(); // stops driving, releases leases, closes the backend

export {};
