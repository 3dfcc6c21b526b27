// Flow control by key: at most `limit` queued runs per key at once, across every worker of the
// queue (ADR 0059). Here one run per tenant at a time; the tenants still run side by side.
import { createRuntime, defineFlow, isLoomError, openMemory } from '@loom/workflow-runtime';

const runningNow = new Map<string, number>();
let mostPerTenant = 0;
let mostOverall = 0;
const sync = defineFlow(
  {
    name: 'sync-account',
    concurrency: { key: (input: { tenant: string; account: string }) => input.tenant, limit: 1 },
  },
  async (ctx, input) =>
    ctx.step('sync', async () => {
      runningNow.set(input.tenant, (runningNow.get(input.tenant) ?? 0) + 1);
      mostPerTenant = Math.max(mostPerTenant, runningNow.get(input.tenant) ?? 0);
      mostOverall = Math.max(
        mostOverall,
        [...runningNow.values()].reduce((a, b) => a + b, 0),
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      runningNow.set(input.tenant, (runningNow.get(input.tenant) ?? 1) - 1);
      return input.account;
    }),
);

const runtime = createRuntime({ backend: openMemory(), flows: [sync] });
for (const tenant of ['acme', 'globex']) {
  for (const account of ['a', 'b', 'c']) {
    await runtime.enqueue('sync', sync, { tenant, account });
  }
}
const worker = runtime.work('sync', { pollMs: 10 });
while ((await runtime.queueStats('sync')).completed < 6) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await worker.stop();
console.log(`most at once: ${mostPerTenant} per tenant, ${mostOverall} in all`);

// A per-key limit holds only for queued runs: a direct start is refused, writing nothing.
await runtime.start(sync, { tenant: 'acme', account: 'd' }).catch((error: unknown) => {
  console.log('start:', isLoomError(error) ? error.code : error);
});
await runtime.shutdown();
