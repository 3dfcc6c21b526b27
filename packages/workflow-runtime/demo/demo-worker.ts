// The demo's worker process: recovers what a dead predecessor left, or starts the order flow.
import { createRuntime, defineFlow } from '../src/index.js';
import { openSqlite } from '../src/sqlite.js';

const [db, executionId] = process.argv.slice(2) as [string, string];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const steps = ['reserve-stock', 'price-order', 'charge-card', 'ship-parcel', 'send-receipt'];

const order = defineFlow({ name: 'order' }, async (ctx, input: { sku: string }) => {
  const done: string[] = [];
  for (const name of steps) {
    let ran = false;
    const result = await ctx.step(name, async (effect) => {
      ran = true;
      console.log(`running step ${name} (idempotency key ${effect.idempotencyKey})`);
      await sleep(400);
      return `${name} ok for ${input.sku}`;
    });
    console.log(`✓ ${name}: ${result}${ran ? '' : '   (replayed from the log, not run again)'}`);
    done.push(name);
  }
  return `order ${executionId} done: ${done.length} steps`;
});

// One call opens the log and everything beside it; shutdown() closes it.
const runtime = createRuntime({
  backend: openSqlite({ path: db, migrate: true }),
  flows: [order],
  // The demo's worker 2 starts right after the SIGKILL: recover at once, not after a quiet period.
  recoverQuietMs: 0,
});
const recovered = await runtime.recover();
if (recovered.length > 0) {
  console.log(
    `recovered ${recovered.join(', ')}: completed steps come back from the log, not re-run`,
  );
}
const handle = await runtime.start(order, { sku: 'loom-1' }, { executionId });
console.log(handle.existing ? `attached to existing ${executionId}` : `started ${executionId}`);
console.log(`result: ${await handle.result()}`);
await runtime.shutdown();
