// Worker for the exactly-once test: a flow whose 'book' step writes a row in the same SQLite
// database as the log, inside the transaction that records the step. LOOM_TX_KILL says where
// this process kills itself: 'inside' (after the row is written, before commit) or 'after'
// (after the commit, before the flow goes on); '' runs to the end.
import type Database from 'better-sqlite3';
import { createRuntime, type Flow } from '../../src/index.js';
import { SqliteEventStore } from '../../src/sqlite.js';

const [db, executionId] = process.argv.slice(2) as [string, string];
const kill = process.env.LOOM_TX_KILL ?? '';

const flow: Flow<null, string> = {
  name: 'booking',
  run: async (ctx) => {
    await ctx.step('quote', () => 42);
    const booked = await ctx.transaction('book', (tx) => {
      const database = tx as Database.Database;
      database.prepare('INSERT INTO bookings (execution_id) VALUES (?)').run(executionId);
      if (kill === 'inside') process.kill(process.pid, 'SIGKILL');
      return database.prepare('SELECT count(*) AS n FROM bookings').get() as { n: number };
    });
    if (kill === 'after') process.kill(process.pid, 'SIGKILL');
    return ctx.step('confirm', () => `booked ${booked.n}`);
  },
};

const store = SqliteEventStore.open({ path: db, migrate: true });
store.database.exec('CREATE TABLE IF NOT EXISTS bookings (execution_id TEXT NOT NULL)');
const runtime = createRuntime({ store, flows: [flow as Flow<never, unknown>], recoverQuietMs: 0 });
await runtime.recover();
const handle = await runtime.start(flow, null, { executionId });
process.stdout.write(`${JSON.stringify({ result: await handle.result() })}\n`);
await runtime.shutdown();
await store.close();
