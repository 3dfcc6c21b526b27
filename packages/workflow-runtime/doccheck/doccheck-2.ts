import { ManualClock } from '@loom/event-runtime/testing';
import { createRuntime, defineFlow, openMemory } from '@loom/workflow-runtime';

const nap = defineFlow({ name: 'nap' }, async (ctx) => {
  await ctx.sleep('1h');
  return 'rested';
});
const clock = new ManualClock();
const runtime = createRuntime({ backend: openMemory({ clock }), flows: [nap], clock });
const handle = await runtime.start(nap, null);
console.log(await clock.runUntilSettled(handle.result())); // 'rested', in milliseconds
await runtime.shutdown();

export {};
