// A worker process that runs the flow triggered by 'shop/order.placed'. Its trigger's `if`
// appends `deliver <pid>` to the log file before the run is started; in mode `hang` it then
// blocks the process for good, so the test can SIGKILL it after the event was claimed and its
// dispatch began but before the triggered run's start is durable. The run's one step appends
// `ran <executionId> <pid>`.
// argv: <sqlite:path | postgres:schema> <log file> <normal | hang>
import { appendFileSync } from 'node:fs';
import { openPostgres } from '@loom/event-runtime/postgres';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow, type PublishedEvent } from '../../src/index.js';

const [target, logFile, mode] = process.argv.slice(2) as [string, string, 'normal' | 'hang'];
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

const fulfil = defineFlow(
  {
    name: 'fulfil',
    trigger: {
      event: 'shop/order.placed',
      if: () => {
        appendFileSync(logFile, `deliver ${process.pid}\n`);
        // Block the whole process (the test kills it): nothing after this line runs here.
        if (mode === 'hang') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
        return true;
      },
      idempotency: (event: PublishedEvent<{ orderId: string }>) => event.data.orderId,
    },
  },
  async (ctx, event) =>
    ctx.step('ship', () => {
      appendFileSync(logFile, `ran ${ctx.executionId} ${process.pid}\n`);
      return `shipped ${event.data.orderId}`;
    }),
);

const backend = target.startsWith('sqlite:')
  ? openSqlite({ path: target.slice('sqlite:'.length), busyTimeoutMs: 10_000 })
  : await openPostgres({ connectionString: pgUrl, schema: target.slice('postgres:'.length) });
const runtime = createRuntime({
  backend,
  flows: [fulfil],
  timerPollMs: 50,
  recoverQuietMs: 1,
  eventDelivery: { pollMs: 20, claimTtlMs: 600 },
});
await runtime.recover();
process.stdout.write('ready\n');
await runtime.serve();
