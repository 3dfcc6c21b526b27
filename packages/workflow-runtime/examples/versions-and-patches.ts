// Versioning: a running execution replays only under its own code; ctx.patched() lets new code
// take a new path for executions that reach it after the deploy.
import { InMemoryEventStore } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';

const v1 = defineFlow({ name: 'onboard' }, async (ctx) => {
  await ctx.step('create-account', () => 'ok');
  await ctx.step('send-welcome', () => 'ok');
  await ctx.sleep('1d');
  return 'v1 path';
});
const v2 = defineFlow({ name: 'onboard' }, async (ctx) => {
  await ctx.step('create-account', () => 'ok');
  const fresh = ctx.patched('verify-email'); // false for executions that already sent the welcome
  if (fresh) await ctx.step('verify-email', () => 'ok');
  await ctx.step('send-welcome', () => 'ok');
  await ctx.sleep('1d');
  return fresh ? 'new path' : 'old path';
});

/** Wait (at most 5 s) until the runtime drives nothing: its executions suspended in their sleep. */
async function suspended(runtime: { activeExecutions: readonly string[] }): Promise<void> {
  for (let polls = 0; runtime.activeExecutions.length > 0; polls++) {
    if (polls === 500) throw new Error('the execution never suspended in its sleep');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const clock = new ManualClock();
const store = new InMemoryEventStore({ clock });
const before = createRuntime({ store, clock, flows: [v1], timerPollMs: 0, inlineWaitMs: 0 });
const old = await before.start(v1, null);
await suspended(before); // it suspends in its sleep
await before.shutdown();

const after = createRuntime({ store, clock, flows: [v2], timerPollMs: 0, inlineWaitMs: 0 }); // the deploy
const fresh = await after.start(v2, null);
await suspended(after);
await clock.advance(86_400_000);
await after.wakeDue();
console.log('started before the deploy:', await after.attach(old.executionId).result());
console.log('started after the deploy:', await fresh.result());
await after.shutdown();
