// One of several processes running the same cron schedule (every second) on one SQLite file.
// Each run appends its occurrence to the effects file. The test kills and restarts these.
// argv: <db> <effects>
import { appendFileSync } from 'node:fs';
import { SqliteEventStore, SqliteLeaseStore } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow } from '../../src/index.js';

const [db, effects] = process.argv.slice(2) as [string, string];
const job = defineFlow({ name: 'tick-job' }, async (ctx) =>
  ctx.step('record', () => {
    appendFileSync(effects, `${ctx.executionId}\n`);
    return process.pid;
  }),
);
const store = SqliteEventStore.open({ path: db, migrate: true, busyTimeoutMs: 10_000 });
const runtime = createRuntime({
  store,
  leases: new SqliteLeaseStore(store.database),
  leaseMode: 'eager',
  leaseTtlMs: 1_500,
  flows: [job as never],
  timerPollMs: 50,
  inlineWaitMs: 0,
  recoverEveryMs: 250,
  recoverQuietMs: 1_000,
});
await runtime.recover();
await runtime.schedule(job, '* * * * * *', {
  name: 'every-second',
  catchUp: 'all',
  overlap: 'allow',
});
process.stdout.write('ready\n');
await runtime.serve();
