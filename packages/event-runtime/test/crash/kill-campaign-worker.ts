// One worker of the kill -9 campaign: several of these share one log (a SQLite file or a
// Postgres schema). Worker slot LOOM_CAMPAIGN_SLOT of LOOM_CAMPAIGN_WORKERS starts the
// executions `campaign-<i>` with i % workers = slot (again after a restart: a start of an
// existing id returns its handle), at most LOOM_CAMPAIGN_CONCURRENCY at a time, and takes over
// what dead workers left (its periodic recovery). Every plain effect run is recorded in
// LOOM_CRASH_EFFECTS (one line, written synchronously before the effect returns); the
// transactional step writes one `crash_side` row. It prints `ready <nodeId>`, then serves until
// its stdin closes, then shuts down and prints `done`. With LOOM_CAMPAIGN_TRACE, what its
// runtime recovered, resumed and lost goes to that file, one timestamped line each.
import { appendFileSync } from 'node:fs';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { openCrashBackend } from './crash-backend.js';

const execs = Number(process.env.LOOM_CAMPAIGN_EXECS);
const workers = Number(process.env.LOOM_CAMPAIGN_WORKERS);
const slot = Number(process.env.LOOM_CAMPAIGN_SLOT);
const concurrency = Number(process.env.LOOM_CAMPAIGN_CONCURRENCY);
const effects = process.env.LOOM_CRASH_EFFECTS as string;

const backend = await openCrashBackend();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Two plain steps around a transactional one; the output is 2 × index + 1. */
const campaignFlow: Flow<{ index: number }, number> = {
  name: 'campaign-flow',
  run: async (ctx, input) => {
    const a = await ctx.step('a', async (effect) => {
      appendFileSync(effects, `${effect.idempotencyKey}\n`);
      await pause(10 + ((input.index * 7) % 30));
      return input.index;
    });
    await ctx.transaction('side', (tx) => backend.insertSide(tx, ctx.executionId));
    return ctx.step('b', async (effect) => {
      appendFileSync(effects, `${effect.idempotencyKey}\n`);
      await pause(10 + ((input.index * 13) % 30));
      return a * 2 + 1;
    });
  },
};

const trace = process.env.LOOM_CAMPAIGN_TRACE;
const runtime = createKernelRuntime({
  store: backend.store,
  flows: [campaignFlow as Flow<never, unknown>],
  leaseMode: 'eager',
  leaseTtlMs: Number(process.env.LOOM_CAMPAIGN_LEASE_TTL_MS ?? 10_000),
  recoverEveryMs: Number(process.env.LOOM_CAMPAIGN_RECOVER_EVERY_MS ?? 500),
  // The campaign with --hand-off: starts are written due, and the workers' polls run them.
  ...(process.env.LOOM_CAMPAIGN_HAND_OFF === '1' ? { handOffStarts: true, timerPollMs: 50 } : {}),
  onError: (error) => process.stderr.write(`onError: ${String(error)}\n`),
});
if (trace !== undefined) {
  for (const name of ['execution:recovered', 'execution:resumed', 'lease:lost'] as const) {
    runtime.events.on(name, (event) =>
      appendFileSync(
        trace,
        `${Date.now()} ${slot} ${runtime.nodeId} ${name} ${event.executionId}\n`,
      ),
    );
  }
  runtime.events.on('store:error', (event) =>
    appendFileSync(
      trace,
      `${Date.now()} ${slot} ${runtime.nodeId} store:error ${String(event.error)}\n`,
    ),
  );
}
// The boot recovery round takes over what this slot's dead predecessor left.
await runtime.recover();
process.stdout.write(`ready ${runtime.nodeId}\n`);

let stopping = false;
const stopped = new Promise<void>((resolve) => {
  process.stdin.on('end', () => {
    stopping = true;
    resolve();
  });
  process.stdin.resume();
});

const inFlight = new Set<Promise<unknown>>();
for (let index = slot; index < execs && !stopping; index += workers) {
  while (inFlight.size >= concurrency) await Promise.race(inFlight);
  const handle = await runtime.start(campaignFlow, { index }, { executionId: `campaign-${index}` });
  const done = handle.result().catch(() => undefined);
  inFlight.add(done);
  void done.finally(() => inFlight.delete(done));
}
process.stdout.write('started\n');
await stopped;
await runtime.shutdown();
await backend.close();
process.stdout.write('done\n');
