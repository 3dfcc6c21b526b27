// One worker of the failover campaign: a long-lived process on the multi-host URL
// (LOOM_CRASH_PG_URL, `target_session_attrs=read-write`) that must outlive the loss of the
// primary and go on by itself. Slot LOOM_FAILOVER_SLOT of LOOM_FAILOVER_WORKERS starts the
// executions `failover-<i>` with i % workers = slot, at most LOOM_FAILOVER_CONCURRENCY at a time,
// and sends each one its `go` signal. The flow: a plain step (at-least-once, every run a line in
// LOOM_FAILOVER_DIR/effects.log), a transactional step (one `crash_side` row, exactly once), a
// timer, a signal, and a non-idempotent "tool" that records every run of it in tool-runs.log and
// is never run again once it may have run: a repeat asks a person (asks.log) and waits for their
// `operator` signal, which this process plays. Prints `ready <nodeId>`, serves until its stdin
// closes, shuts down and prints `done <store errors>`; any crash is a non-zero exit.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { openCrashBackend } from '../crash/crash-backend.js';

const execs = Number(process.env.LOOM_FAILOVER_EXECS);
const workers = Number(process.env.LOOM_FAILOVER_WORKERS);
const slot = Number(process.env.LOOM_FAILOVER_SLOT);
const concurrency = Number(process.env.LOOM_FAILOVER_CONCURRENCY);
const directory = process.env.LOOM_FAILOVER_DIR as string;
const effects = join(directory, 'effects.log');
const toolRuns = join(directory, 'tool-runs.log');
const asks = join(directory, 'asks.log');
/** How long this worker keeps re-sending a signal the store refused (a failover is under way). */
const signalDeadlineMs = 120_000;

const backend = await openCrashBackend();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const linesOf = (path: string) =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((line) => line.length > 0)
    : [];

/** The output is 2 × index + 1, whichever way the tool's question was settled. */
export const failoverFlow: Flow<{ index: number }, number> = {
  name: 'failover-flow',
  run: async (ctx, input) => {
    const a = await ctx.step('a', async (effect) => {
      appendFileSync(effects, `${effect.idempotencyKey}\n`);
      await pause(5 + ((input.index * 7) % 20));
      return input.index;
    });
    await ctx.transaction('side', (tx) => backend.insertSide(tx, ctx.executionId));
    await ctx.sleep(100 + ((input.index * 37) % 400), 'nap');
    const go = await ctx.waitForSignal('go', { timeoutMs: 300_000 });
    if (!go.received || go.payload !== input.index)
      throw new Error(`${ctx.executionId}: the go signal was ${JSON.stringify(go)}`);
    // A tool with a side effect outside the database, not idempotent: it runs at most once. A
    // run of this step that finds an earlier run of the same call (its process lost the store
    // mid-call, or another process drove the same step) does not call it again.
    const tool = await ctx.step(
      'tool',
      (effect) => {
        if (linesOf(toolRuns).some((line) => line.startsWith(`${effect.idempotencyKey} `)))
          return { ran: false };
        appendFileSync(toolRuns, `${effect.idempotencyKey} ${process.pid}\n`);
        return { ran: true };
      },
      { idempotent: false, retry: false },
    );
    if (!tool.ran) {
      await ctx.step('ask', () => {
        appendFileSync(asks, `${ctx.executionId}\n`);
        return null;
      });
      const decided = await ctx.waitForSignal('operator', { timeoutMs: 300_000 });
      if (!decided.received)
        throw new Error(`${ctx.executionId}: nobody answered the tool's question`);
    }
    return a * 2 + 1;
  },
};

let storeErrors = 0;
const runtime = createKernelRuntime({
  store: backend.store,
  flows: [failoverFlow as Flow<never, unknown>],
  recoverEveryMs: 500,
  timerPollMs: 200,
  // Every timer suspends the execution and is woken by a poll of the store, never in memory.
  inlineWaitMs: 0,
  onError: (error) => {
    storeErrors += 1;
    process.stderr.write(`onError: ${String(error)}\n`);
  },
});
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

/** Sends a signal, again and again while the store refuses it, within signalDeadlineMs. */
async function send(executionId: string, name: string, payload: unknown): Promise<void> {
  const until = Date.now() + signalDeadlineMs;
  for (;;) {
    try {
      await runtime.signal(executionId, name, payload, {
        idempotencyKey: `${executionId}/${name}`,
      });
      return;
    } catch (error) {
      if (Date.now() > until) throw error;
      await pause(200);
    }
  }
}

// The person: answers every question a tool asked, once.
const answered = new Set<string>();
const operator = (async () => {
  while (!stopping) {
    for (const id of linesOf(asks)) {
      if (answered.has(id) || Number(id.slice('failover-'.length)) % workers !== slot) continue;
      answered.add(id);
      await send(id, 'operator', { decision: 'recorded by hand' });
    }
    await pause(200);
  }
})();

const inFlight = new Set<Promise<unknown>>();
for (let index = slot; index < execs && !stopping; index += workers) {
  while (inFlight.size >= concurrency) await Promise.race(inFlight);
  const executionId = `failover-${index}`;
  const started = (async () => {
    for (const until = Date.now() + signalDeadlineMs; ; ) {
      try {
        return await runtime.start(failoverFlow, { index }, { executionId });
      } catch (error) {
        if (Date.now() > until) throw error;
        await pause(200);
      }
    }
  })();
  const done = started
    .then(async (handle) => {
      await send(executionId, 'go', index);
      await handle.result().catch(() => undefined);
    })
    .catch((error) => process.stderr.write(`${executionId}: ${String(error)}\n`));
  inFlight.add(done);
  void done.finally(() => inFlight.delete(done));
}
process.stdout.write('started\n');
await stopped;
await operator;
await runtime.shutdown();
await backend.close();
process.stdout.write(`done ${storeErrors}\n`);
