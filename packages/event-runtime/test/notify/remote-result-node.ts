// The other node for remote-wake.test.ts's result() test: starts `remote-1`, whose step waits
// for a `go` line on stdin, prints `started`, and finishes the flow once told to go. Its store
// announces the appends after their commit (ADR 0028), which is all the waiting node can hear.
import { createInterface } from 'node:readline';
import type { Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';

const [url, schema] = process.argv.slice(2) as [string, string];
const go = new Promise<void>((resolve) => {
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === 'go') resolve();
  });
});

const flow: Flow<null, string> = {
  name: 'remote-flow',
  run: async (ctx) => {
    await ctx.step('wait-for-go', () => go);
    return ctx.step('done', () => 'finished on the other node');
  },
};

const store = await PostgresEventStore.open({ connectionString: url, schema });
const runtime = createKernelRuntime({
  store,
  nodeId: 'writer',
  flows: [flow as Flow<never, unknown>],
});
const handle = await runtime.start(flow, null, { executionId: 'remote-1' });
process.stdout.write('started\n');
await handle.result();
await runtime.shutdown();
await store.close();
process.stdout.write('done\n', () => process.exit(0));
