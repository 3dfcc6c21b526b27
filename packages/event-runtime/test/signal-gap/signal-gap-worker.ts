// A node for the signal-gap tests (ADR 0033), on a SQLite file or a Postgres schema.
// env: LOOM_GAP_BACKEND (sqlite | postgres), LOOM_GAP_DB or LOOM_GAP_PG_URL + LOOM_GAP_SCHEMA,
//      LOOM_GAP_MODE, LOOM_GAP_ID (the execution).
//   start-signal: start a flow that waits for signal 'go'. When its driver appends the suspension
//                 (it has read the inbox and found nothing), say `suspending` and hold the append
//                 until a line on stdin, then append it and SIGKILL this process at once: the
//                 post-suspension look at the inbox never runs.
//   start-child:  the same for a parent waiting for its child; the child (in this process) ends
//                 once the file LOOM_GAP_RELEASE exists, so the test decides when.
//   serve:        recover and poll timers until the execution settles; print its result.
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { AppendGuard, EventEnvelope, EventStore, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';

const mode = process.env.LOOM_GAP_MODE as string;
const executionId = process.env.LOOM_GAP_ID as string;
const say = (fact: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(fact)}\n`);

const waiter: Flow<null, unknown> = {
  name: 'gap-waiter',
  run: async (ctx) => {
    const signal = await ctx.waitForSignal('go');
    return signal.received ? signal.payload : null;
  },
};

/** Ends once the file LOOM_GAP_RELEASE exists: its step runs until then (it never suspends). */
const child: Flow<null, unknown> = {
  name: 'gap-child',
  run: async (ctx) =>
    ctx.step('hold', async () => {
      const release = process.env.LOOM_GAP_RELEASE as string;
      while (!existsSync(release)) await new Promise((resolve) => setTimeout(resolve, 10));
      return { child: 'released' };
    }),
};

const parent: Flow<null, unknown> = {
  name: 'gap-parent',
  run: async (ctx) => ({
    parent: await ctx.child(child, null, { executionId: `${ctx.executionId}.child` }),
  }),
};

async function open(): Promise<EventStore> {
  if (process.env.LOOM_GAP_BACKEND === 'postgres') {
    return PostgresEventStore.open({
      connectionString: process.env.LOOM_GAP_PG_URL as string,
      schema: process.env.LOOM_GAP_SCHEMA as string,
    });
  }
  return SqliteEventStore.open({ path: process.env.LOOM_GAP_DB as string });
}

/** Held appends of `executionId`'s suspension: released by a line on stdin. */
const nextLine = () =>
  new Promise<void>((resolve) =>
    createInterface({ input: process.stdin }).once('line', () => resolve()),
  );

/**
 * The store as the runtime sees it: every call goes to `store`, except that the suspension of
 * `executionId` is held until the test says so, and the process dies as soon as it is durable.
 * No `appendBatch` or `transact`, so every append of the runtime comes through `append`.
 */
function dyingAfterSuspension(store: EventStore): EventStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'appendBatch' || property === 'transact') return undefined;
      if (property === 'append') {
        return async (envelopes: readonly EventEnvelope[], guard?: AppendGuard) => {
          const mine = envelopes[0]?.executionId === executionId && guard?.status === 'suspended';
          if (!mine) return target.append(envelopes, guard);
          say({ fact: 'suspending', guard });
          await nextLine();
          const stored = await target.append(envelopes, guard);
          process.kill(process.pid, 'SIGKILL');
          return stored;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const store = await open();
const flows = [waiter, parent, child] as Flow<never, unknown>[];
if (mode === 'serve') {
  const runtime = createKernelRuntime({ store, flows, timerPollMs: 50, recoverQuietMs: 0 });
  await runtime.recover();
  say({ fact: 'result', result: await runtime.attach(executionId).result() });
  await runtime.shutdown();
  await store.close();
} else {
  const runtime = createKernelRuntime({
    store: dyingAfterSuspension(store),
    flows,
    // No timer poll: the only look at the inbox after the suspension is the driver's own.
    timerPollMs: 0,
    inlineWaitMs: 0,
    recoverQuietMs: 0,
  });
  await runtime.start(mode === 'start-child' ? parent : waiter, null, { executionId });
  say({ fact: 'started' });
  await new Promise(() => undefined);
}
