// A node for the zombie test. LOOM_ZOMBIE_ROLE=owner starts the execution and blocks in its
// effect until the effect's AbortSignal fires; LOOM_ZOMBIE_ROLE=rescuer recovers it once the
// owner's lease expired and finishes it. Each prints one JSON line per fact.
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore, PostgresLeaseStore } from '../../src/postgres.js';

const role = process.env.LOOM_ZOMBIE_ROLE as 'owner' | 'rescuer';
const schema = process.env.LOOM_ZOMBIE_SCHEMA as string;
const url = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const say = (fact: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ role, ...fact })}\n`);

const flow: Flow<null, string> = {
  name: 'zombie-flow',
  run: async (ctx) => {
    const first = await ctx.step('slow', async (effect) => {
      say({ fact: 'effect-started', key: effect.idempotencyKey });
      if (role === 'rescuer') return 'rescued';
      return new Promise<string>((_, reject) => {
        const timer = setTimeout(() => reject(new Error('no abort within 45 s')), 45_000);
        effect.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          say({
            fact: 'aborted',
            reason: String((effect.signal.reason as Error)?.message ?? effect.signal.reason),
          });
          reject(effect.signal.reason);
        });
      });
    });
    return ctx.step('after', () => `${first} by ${role}`);
  },
};

const store = await PostgresEventStore.open({ connectionString: url, schema });
await store.migrate();
const leases = await PostgresLeaseStore.open({ pool: store.connectionPool, schema });
const runtime = createKernelRuntime({
  store,
  leases,
  leaseMode: 'eager',
  leaseTtlMs: 2_000,
  renewEveryMs: 500,
  recoverQuietMs: 0,
  nodeId: role,
  flows: [flow as Flow<never, unknown>],
});

if (role === 'owner') {
  const handle = await runtime.start(flow, null, { executionId: 'zombie-1' });
  say({ fact: 'started' });
  say({ fact: 'result', result: await handle.result() });
} else {
  let resumed: string[] = [];
  const deadline = Date.now() + 30_000;
  while (resumed.length === 0) {
    resumed = await runtime.recover();
    if (resumed.length > 0) break;
    if (Date.now() > deadline) throw new Error('recovered nothing within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  say({ fact: 'recovered', ids: resumed });
  say({ fact: 'result', result: await runtime.attach('zombie-1').result() });
}
await runtime.shutdown();
await leases.close();
await store.close();
