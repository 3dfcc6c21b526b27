// A cron schedule: itself a durable execution, so each occurrence fires once across processes.
import { createRuntime, defineFlow, nextOccurrence, openMemory } from '@loom/workflow-runtime';

console.log(
  'next weekday 09:00 in Berlin:',
  new Date(nextOccurrence('0 9 * * MON-FRI', Date.now(), 'Europe/Berlin')).toISOString(),
);

const fired: string[] = [];
const heartbeat = defineFlow({ name: 'heartbeat' }, async (ctx) =>
  ctx.step('beat', () => void fired.push(ctx.executionId)),
);
const runtime = createRuntime({
  backend: openMemory(),
  flows: [heartbeat],
  timerPollMs: 50,
  inlineWaitMs: 0,
});
await runtime.schedule(heartbeat, '* * * * * *', {
  name: 'every-second',
  overlap: 'skip',
  catchUp: 'latest',
});
await new Promise((resolve) => setTimeout(resolve, 2_600));
await runtime.unschedule('every-second');
console.log(`fired ${fired.length} runs, e.g. ${fired[0]}`);
await runtime.shutdown();
