// A worker process for the recovery tests: opens the store the test names, builds a runtime with
// the default recovery settings (only the lease TTL is set, to ten minutes, so nothing here can
// be recovered by waiting a lease out), starts the executions in LOOM_REC_START and serves until
// it is killed. A step hangs in this process when its execution id starts with
// LOOM_REC_HANG_PREFIX; elsewhere it completes at once.
import { createRuntime, type EventStore, type Flow, type LeaseStore } from '../../src/index.js';
import { PostgresEventStore, PostgresLeaseStore } from '../../src/postgres.js';
import { SqliteEventStore, SqliteLeaseStore } from '../../src/sqlite.js';

export const recoveryTtlMs = 600_000;

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

async function open(): Promise<{ store: EventStore; leases: LeaseStore }> {
  if (process.env.LOOM_REC_BACKEND === 'postgres') {
    const schema = process.env.LOOM_REC_SCHEMA as string;
    const store = await PostgresEventStore.open({
      connectionString: process.env.LOOM_REC_PG_URL as string,
      schema,
    });
    const leases = await PostgresLeaseStore.open({ pool: store.connectionPool, schema });
    return { store, leases };
  }
  const store = SqliteEventStore.open({ path: process.env.LOOM_REC_DB as string });
  return { store, leases: new SqliteLeaseStore(store.database) };
}

const { store, leases } = await open();
const runtime = createRuntime({
  store,
  leases,
  flows: [flow as Flow<never, unknown>],
  leaseTtlMs: recoveryTtlMs,
  ...(process.env.LOOM_REC_LEASE_MODE === 'eager' ? { leaseMode: 'eager' as const } : {}),
  onError: (error) => process.stderr.write(`onError: ${String(error)}\n`),
});
const recovered = await runtime.recover();
process.stdout.write(`ready node=${runtime.nodeId} recovered=${recovered.sort().join(',')}\n`);
for (const id of toStart) await runtime.start(flow, null, { executionId: id });
process.stdout.write('started\n');
await runtime.serve();
