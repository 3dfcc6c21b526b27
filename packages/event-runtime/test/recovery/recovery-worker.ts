// A worker process for the recovery tests: opens the store the test names, builds a runtime with
// the default settings — no lease store given (the event store's own is used), default recovery
// settings; only the lease TTL is set, to ten minutes, so nothing here can be recovered by
// waiting a lease out (LOOM_REC_EVERY_MS sets recoverEveryMs) — starts the executions in
// LOOM_REC_START (and parents of one child each in LOOM_REC_START_PARENTS) and serves until it
// is killed. A step hangs in this process when its execution id starts with
// LOOM_REC_HANG_PREFIX; elsewhere it completes at once.
import type { EventStore, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';

const recoveryTtlMs = 600_000;

const hangPrefix = process.env.LOOM_REC_HANG_PREFIX ?? '';
const toStart = (process.env.LOOM_REC_START ?? '').split(',').filter((id) => id !== '');

const flow: Flow<null, string> = {
  name: 'recovery-flow',
  run: async (ctx) => {
    await ctx.step('work', async (effect) => {
      process.stdout.write(`effect ${effect.executionId}\n`);
      if (hangPrefix !== '' && effect.executionId.startsWith(hangPrefix)) {
        await new Promise(() => undefined);
      }
      return 1;
    });
    return 'done';
  },
};

// A parent that waits for its child (`<id>.0`, a run of `flow`): the child's step hangs where
// the parent's id has the hang prefix.
const parent: Flow<null, string> = {
  name: 'recovery-parent',
  run: async (ctx) => `parent of ${await ctx.child(flow, null)}`,
};
const parentsToStart = (process.env.LOOM_REC_START_PARENTS ?? '')
  .split(',')
  .filter((id) => id !== '');

async function open(): Promise<EventStore> {
  if (process.env.LOOM_REC_BACKEND === 'postgres') {
    return PostgresEventStore.open({
      connectionString: process.env.LOOM_REC_PG_URL as string,
      schema: process.env.LOOM_REC_SCHEMA as string,
    });
  }
  return SqliteEventStore.open({ path: process.env.LOOM_REC_DB as string });
}

const store = await open();
const runtime = createKernelRuntime({
  store,
  flows: [flow as Flow<never, unknown>, parent as Flow<never, unknown>],
  leaseTtlMs: recoveryTtlMs,
  ...(process.env.LOOM_REC_EVERY_MS === undefined
    ? {}
    : { recoverEveryMs: Number(process.env.LOOM_REC_EVERY_MS) }),
  ...(process.env.LOOM_REC_LEASE_MODE === 'eager' ? { leaseMode: 'eager' as const } : {}),
  onError: (error) => process.stderr.write(`onError: ${String(error)}\n`),
});
const recovered = await runtime.recover();
process.stdout.write(`ready node=${runtime.nodeId} recovered=${recovered.sort().join(',')}\n`);
for (const id of toStart) await runtime.start(flow, null, { executionId: id });
for (const id of parentsToStart) await runtime.start(parent, null, { executionId: id });
process.stdout.write('started\n');
await runtime.serve();
