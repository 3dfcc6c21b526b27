// A process driving an order whose 'charge' step always fails, with a durable retry policy of
// four attempts. Each attempt appends its number to the attempts file (the side channel the
// test counts). The test SIGKILLs the first process mid-retry and starts a second one.
// argv: <sqlite:path | postgres:schema> <attempts file> <start | recover> <suspend | inline>
import { appendFileSync } from 'node:fs';
import type { EventStore } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow } from '../../src/index.js';

const [target, attemptsFile, mode, wait] = process.argv.slice(2) as [
  string,
  string,
  'start' | 'recover',
  'suspend' | 'inline',
];
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

const retryAttempts = 4;
const order = defineFlow({ name: 'order' }, async (ctx) =>
  ctx.step(
    'charge',
    (effect) => {
      appendFileSync(attemptsFile, `${effect.attempt}\n`);
      throw new Error(`card gateway down (attempt ${effect.attempt})`);
    },
    // 700 ms between attempts: long enough for the test to kill the process inside the wait.
    { retry: { attempts: retryAttempts, backoff: { initialMs: 700, factor: 1, jitter: 'none' } } },
  ),
);

const store: EventStore = target.startsWith('sqlite:')
  ? SqliteEventStore.open({ path: target.slice('sqlite:'.length), busyTimeoutMs: 10_000 })
  : await PostgresEventStore.open({
      connectionString: pgUrl,
      schema: target.slice('postgres:'.length),
    });
const runtime = createRuntime({
  store,
  flows: [order as never],
  timerPollMs: 50,
  // 'suspend': every backoff is a suspension the timer service wakes; 'inline': the backoff is
  // waited in memory (after the attempt is durable), and the next process recovers it.
  inlineWaitMs: wait === 'suspend' ? 0 : 10_000,
  recoverQuietMs: 1,
});
if (mode === 'start') await runtime.start(order, null, { executionId: 'order-1' });
else await runtime.recover();
process.stdout.write('ready\n');
await runtime.serve();
