// Durable time: the execution suspends (no lease, no memory) and the timer service wakes it.
import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';

const reminder = defineFlow({ name: 'reminder' }, async (ctx, who: string) => {
  const sentAt = ctx.now(); // recorded: the same value on every replay
  await ctx.sleep('1s'); // would be '3d' in real life
  return `reminded ${who}, ${ctx.now() - sentAt} ms later`;
});

const runtime = createRuntime({
  backend: openMemory(),
  flows: [reminder],
  timerPollMs: 100,
  inlineWaitMs: 0,
});
const handle = await runtime.start(reminder, 'ada');
// It records the timer and suspends: wait (at most 5 s) until this process drives nothing.
for (let polls = 0; runtime.activeExecutions.length > 0 && polls < 1_000; polls++) {
  await new Promise((resolve) => setTimeout(resolve, 5));
}
console.log('active while sleeping:', runtime.activeExecutions.length);
console.log(await handle.result());
await runtime.shutdown();
