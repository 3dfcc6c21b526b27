// A worker process of a rolling upgrade: LOOM_UPGRADE_BUILD=old runs without the `signalled`
// flow, =new with it. Opens the database the test names (SQLite file or Postgres schema), a 3 s
// lease, recovery every 0.5 s, timers polled every LOOM_UPGRADE_POLL_MS; prints "ready <nodeId>"
// and serves until killed, printing every error it hears as "error <code>".
import type { EventStore, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';
import { other, signalled } from './upgrade-flows.js';

async function open(): Promise<EventStore> {
  if (process.env.LOOM_UPGRADE_BACKEND === 'postgres') {
    return PostgresEventStore.open({
      connectionString: process.env.LOOM_UPGRADE_PG_URL as string,
      schema: process.env.LOOM_UPGRADE_SCHEMA as string,
    });
  }
  return SqliteEventStore.open({ path: process.env.LOOM_UPGRADE_DB as string });
}

const build = process.env.LOOM_UPGRADE_BUILD;
const flows = (build === 'new' ? [signalled, other] : [other]) as Flow<never, unknown>[];
const store = await open();
const runtime = createKernelRuntime({
  store,
  flows,
  nodeId: `node-${build}`,
  leaseTtlMs: 3_000,
  recoverEveryMs: 500,
  timerPollMs: Number(process.env.LOOM_UPGRADE_POLL_MS ?? 1_000),
  onError: (error) => {
    process.stdout.write(`error ${(error as { code?: string }).code ?? String(error)}\n`);
  },
});
await runtime.recover();
process.stdout.write(`ready node-${build}\n`);
await runtime.serve();
