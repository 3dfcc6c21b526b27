// The flows the `loom worker` tests run (a plain ES module, as `--flows` takes). `job` has three
// steps and returns 2n + 1; each effect run appends its idempotency key to $LOOM_WORKER_EFFECTS
// (synchronously, before the step returns) and takes $LOOM_WORKER_STEP_MS (default 20) ms.
import { appendFileSync } from 'node:fs';
import { defineFlow } from '@loom/workflow-runtime';

const effects = process.env.LOOM_WORKER_EFFECTS;
const stepMs = Number(process.env.LOOM_WORKER_STEP_MS ?? 20);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const effect = async (key, value) => {
  if (effects !== undefined) appendFileSync(effects, `${key}\n`);
  await pause(stepMs);
  return value;
};

export const job = defineFlow({ name: 'job' }, async (ctx, input) => {
  const a = await ctx.step('a', (run) => effect(run.idempotencyKey, input.n));
  const b = await ctx.step('b', (run) => effect(run.idempotencyKey, a * 2));
  return ctx.step('c', (run) => effect(run.idempotencyKey, b + 1));
});

/** Sleeps past the inline wait (it suspends), so only a timer poll finishes it. */
export const napper = defineFlow({ name: 'napper' }, async (ctx, input) => {
  await ctx.step('before', (run) => effect(run.idempotencyKey, null));
  await ctx.sleep(input.ms);
  return ctx.step('after', (run) => effect(run.idempotencyKey, 'rested'));
});

/** Placed: only a runtime tagged `gpu` runs it (`loom worker --tags gpu`). */
export const render = defineFlow(
  { name: 'render', placement: { tags: ['gpu'] } },
  async (ctx, input) => ctx.step('frame', (run) => effect(run.idempotencyKey, `frame ${input.n}`)),
);
