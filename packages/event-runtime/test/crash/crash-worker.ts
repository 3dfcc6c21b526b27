// A worker process for the crash test: drives LOOM_CRASH_EXECS executions of a
// LOOM_CRASH_STEPS-step flow, at most LOOM_CRASH_CONCURRENCY at a time, and records every
// effect run in LOOM_CRASH_EFFECTS (one line per run, appended synchronously before the
// effect returns), then records the total. The test SIGKILLs it at random moments and starts it again.
import { appendFileSync } from 'node:fs';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { openCrashBackend } from './crash-backend.js';

const execs = Number(process.env.LOOM_CRASH_EXECS ?? 200);
const steps = Number(process.env.LOOM_CRASH_STEPS ?? 5);
const concurrency = Number(process.env.LOOM_CRASH_CONCURRENCY ?? 8);
const effects = process.env.LOOM_CRASH_EFFECTS as string;

const flow: Flow<{ index: number }, number> = {
  name: 'crash-flow',
  run: async (ctx, input) => {
    let total = 0;
    for (let step = 0; step < steps; step++) {
      total += await ctx.step(`step-${step}`, async (effect) => {
        appendFileSync(effects, `${effect.idempotencyKey}\n`);
        await new Promise((resolve) =>
          setTimeout(resolve, 15 + ((input.index * 7 + step * 13) % 40)),
        );
        return step;
      });
    }
    // A record (`ctx.record`, no start record): durable in the same write as the end, so a kill
    // leaves both or neither, and the check finds its completion once.
    return ctx.record('total', () => total);
  },
};

const backend = await openCrashBackend();
// One worker at a time drives this log, so a dead predecessor's executions are recovered at
// once (no quiet period, no leases to wait out).
const runtime = createKernelRuntime({
  store: backend.store,
  flows: [flow as Flow<never, unknown>],
  recoverQuietMs: 0,
});
const recovered = await runtime.recover();
process.stdout.write(`ready recovered=${recovered.length}\n`);

const inFlight = new Set<Promise<unknown>>();
for (const id of recovered) {
  const done = runtime.attach(id).result();
  inFlight.add(done);
  void done.finally(() => inFlight.delete(done));
}
for (let index = 0; index < execs; index++) {
  while (inFlight.size >= concurrency) await Promise.race(inFlight);
  const handle = await runtime.start(flow, { index }, { executionId: `crash-${index}` });
  const done = handle.result();
  inFlight.add(done);
  void done.finally(() => inFlight.delete(done));
}
await Promise.all(inFlight);
await runtime.shutdown();
await backend.close();
process.stdout.write('done\n');
