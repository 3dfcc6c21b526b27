// Flow control by key (ADR 0059): at most `limit` queued runs per key at once, across every
// worker of the queue — here one run per tenant at a time, the tenants still side by side — and
// a throttle: at most `limit` starts per key per period, the rest waiting their turn; and a
// singleton: one unfinished run per key, a second start answered with the first; and a dedupe
// window: within the window, a start of the same key answers the first run, finished or not.
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

// A throttle: at most 2 starts per tenant per minute. The third run of acme waits in the queue
// (delayed, not dropped) while globex's run starts at once.
const report = defineFlow(
  {
    name: 'send-report',
    throttle: { key: (input: { tenant: string }) => input.tenant, limit: 2, periodMs: 60_000 },
  },
  async (ctx, input) => ctx.step('send', () => `sent to ${input.tenant}`),
);
for (const tenant of ['acme', 'acme', 'acme', 'globex']) {
  await runtime.enqueue('reports', report, { tenant });
}
const reports = runtime.work('reports', { pollMs: 10 });
while ((await runtime.queueStats('reports')).completed < 3) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await reports.stop();
const stats = await runtime.queueStats('reports');
console.log(`throttled: ${stats.completed} started, ${stats.depth} waiting for the next minute`);

// A singleton: while a refresh of an account waits or runs, another start of it is skipped and
// answered with the existing run.
const refresh = defineFlow(
  {
    name: 'refresh-account',
    singleton: { key: (input: { account: string }) => input.account, mode: 'skip' },
  },
  async (ctx, input) => ctx.step('refresh', () => `refreshed ${input.account}`),
);
const firstRefresh = await runtime.enqueue('refresh', refresh, { account: 'a-1' });
const again = await runtime.enqueue('refresh', refresh, { account: 'a-1' });
console.log(
  `singleton: duplicate ${again.duplicate}, same run ${again.itemId === firstRefresh.itemId}`,
);

// A dedupe window: a webhook delivered twice within ten minutes charges once.
const charge = defineFlow(
  {
    name: 'charge-order',
    idempotency: { key: (input: { order: string }) => input.order, windowMs: 600_000 },
  },
  async (ctx, input) => ctx.step('charge', () => `charged ${input.order}`),
);
const firstCharge = await runtime.enqueue('orders', charge, { order: 'o-7' });
const charges = runtime.work('orders', { pollMs: 10 });
while ((await runtime.queueStats('orders')).completed < 1) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await charges.stop();
const redelivered = await runtime.enqueue('orders', charge, { order: 'o-7' });
console.log(
  `dedupe window: after the run finished, duplicate ${redelivered.duplicate}, ` +
    `same run ${redelivered.itemId === firstCharge.itemId}`,
);
await runtime.shutdown();
