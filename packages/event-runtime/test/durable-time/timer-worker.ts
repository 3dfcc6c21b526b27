// A node for the real-process timer and signal tests, on one SQLite file.
// argv: <mode> <db> <executionId> [payload]
//   sleep-start: start a flow that sleeps 1.5 s, say when it is suspended, then idle (the test kills it)
//   serve:       recover and poll timers until the execution settles, print its result
//   wait-start:  start a flow that waits for signal 'go', poll timers, print its result
//   send:        send signal 'go' with the payload from this (second) process
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { SqliteEventStore } from '../../src/sqlite.js';

const [mode, db, executionId, payload] = process.argv.slice(2) as [string, string, string, string?];
const say = (fact: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(fact)}\n`);

const sleeper: Flow<null, { wakeAtMs: number; wokeAtMs: number }> = {
  name: 'sleeper',
  run: async (ctx) => {
    const wakeAtMs = ctx.now() + 1_500;
    await ctx.sleepUntil(wakeAtMs);
    const wokeAtMs = await ctx.step('woke', () => Date.now());
    return { wakeAtMs, wokeAtMs };
  },
};

const waiter: Flow<null, unknown> = {
  name: 'waiter',
  run: async (ctx) => {
    const signal = await ctx.waitForSignal('go');
    return signal.received ? signal.payload : null;
  },
};

const store = SqliteEventStore.open({ path: db, migrate: true, pollIntervalMs: 50 });
const runtime = createKernelRuntime({
  store,
  flows: [sleeper as Flow<never, unknown>, waiter as Flow<never, unknown>],
  timerPollMs: 50,
  inlineWaitMs: 0,
  recoverQuietMs: 0,
});

async function suspended(): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = await store.findExecutions({ status: 'suspended' });
    if (found.some((summary) => summary.executionId === executionId)) return;
    if (Date.now() > deadline) throw new Error(`${executionId} did not suspend within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

if (mode === 'sleep-start') {
  await runtime.start(sleeper, null, { executionId });
  await suspended();
  say({ fact: 'suspended' });
  await new Promise(() => undefined);
} else if (mode === 'serve') {
  // How it was woken: this process's timer service claiming it when due (`timer:fired`).
  let timerFired = 0;
  runtime.events.on('timer:fired', (event) => {
    if (event.executionId === executionId) timerFired += 1;
  });
  await runtime.recover();
  say({ fact: 'result', result: await runtime.attach(executionId).result(), timerFired });
} else if (mode === 'wait-start') {
  const handle = await runtime.start(waiter, null, { executionId });
  await suspended();
  say({ fact: 'suspended' });
  say({ fact: 'result', result: await handle.result() });
} else if (mode === 'send') {
  say({
    fact: 'sent',
    ...(await runtime.signal(executionId, 'go', JSON.parse(payload ?? 'null'))),
  });
}
await runtime.shutdown();
await store.close();
