// A worker process for the poison test: opens the SQLite file (or Postgres schema) the test names, recovers what the
// previous incarnation left, starts the executions in LOOM_POISON_START (first incarnation only)
// and serves. The step of an execution whose id starts with `poison` kills this process with
// SIGKILL (or process.exit(1) with LOOM_POISON_HOW=exit), every time it runs; every other execution sleeps a little between two steps, so some
// are in flight whenever the process dies. An execution whose id starts with `retried` has a retry
// policy on that step: its first attempt throws, and every later attempt kills the process.
import { writeSync } from 'node:fs';
import type { EventStore, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';

const toStart = (process.env.LOOM_POISON_START ?? '').split(',').filter((id) => id !== '');

const flow: Flow<null, string> = {
  name: 'poison-flow',
  run: async (ctx) => {
    const first = await ctx.step('first', () => 'a');
    await ctx.sleep(20);
    const retried = ctx.executionId.startsWith('retried');
    const second = await ctx.step(
      'second',
      (effect) => {
        // Synchronously: process.exit drops what an asynchronous pipe write still buffers.
        writeSync(1, `effect ${effect.executionId} attempt ${effect.attempt}\n`);
        if (retried && effect.attempt === 1) throw new Error('first attempt fails');
        if (effect.executionId.startsWith('poison') || retried) {
          if (process.env.LOOM_POISON_HOW === 'exit') process.exit(1);
          process.kill(process.pid, 'SIGKILL');
        }
        return 'b';
      },
      retried ? { retry: { attempts: 5, backoff: { initialMs: 10, jitter: 'none' } } } : undefined,
    );
    return `${first}${second}`;
  },
};

async function open(): Promise<EventStore> {
  if (process.env.LOOM_POISON_PG_SCHEMA !== undefined) {
    return PostgresEventStore.open({
      connectionString: process.env.LOOM_POISON_PG_URL as string,
      schema: process.env.LOOM_POISON_PG_SCHEMA,
    });
  }
  return SqliteEventStore.open({ path: process.env.LOOM_POISON_DB as string });
}

const store = await open();
const runtime = createKernelRuntime({
  store,
  flows: [flow as Flow<never, unknown>],
  stepInterruptionsMax: Number(process.env.LOOM_POISON_MAX),
  onError: (error) => process.stderr.write(`onError: ${String(error)}\n`),
});
const recovered = await runtime.recover();
process.stdout.write(`ready recovered=${recovered.length}\n`);
for (const id of toStart) await runtime.start(flow, null, { executionId: id });
process.stdout.write('started\n');
await runtime.serve();
