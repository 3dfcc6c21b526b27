// Seeing executions from code: list them by flow, version, how they ended and when, page by
// cursor; count a queue's waiting, running and failed items. One store query each.
import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';

const charge = defineFlow({ name: 'charge', version: '1' }, async (ctx, cents: number) => {
  const receipt = await ctx.step('charge', () => (cents > 0 ? `charged ${cents}` : 'declined'));
  if (receipt === 'declined') throw new Error('card declined');
  return receipt;
});

const runtime = createRuntime({
  backend: openMemory(),
  flows: [charge],
});
for (const [id, cents] of [
  ['charge-1', 500],
  ['charge-2', 0],
  ['charge-3', 900],
] as const) {
  await (await runtime.start(charge, cents, { executionId: id })).result().catch(() => undefined);
}

const failed = await runtime.findExecutions({ flow: charge, status: 'failed' });
console.log('failed:', failed.executions.map((execution) => execution.id).join(', '));
let cursor: string | undefined;
const seen: string[] = [];
do {
  const page = await runtime.findExecutions({
    flow: 'charge',
    version: '1',
    limit: 2,
    ...(cursor === undefined ? {} : { cursor }),
  });
  seen.push(...page.executions.map((execution) => `${execution.id}:${execution.status}`));
  cursor = page.nextCursor;
} while (cursor !== undefined);
console.log('all:', seen.join(' '));

await runtime.enqueue('charges', charge, 700);
await runtime.enqueue('charges', charge, 0);
const worker = runtime.work('charges', { pollMs: 10 });
for (let finished = 0; finished < 2; ) {
  await new Promise((resolve) => setTimeout(resolve, 10));
  const { completed, failed } = await runtime.queueStats('charges');
  finished = completed + failed;
}
await worker.stop();
const stats = await runtime.queueStats('charges');
console.log(
  `queue charges: depth ${stats.depth}, completed ${stats.completed}, failed ${stats.failed}`,
);
await runtime.shutdown();
