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
await new Promise((resolve) => setTimeout(resolve, 100)); // it records the timer and suspends
console.log('active while sleeping:', runtime.activeExecutions.length);
console.log(await handle.result());
await runtime.shutdown();
