// Worker for the exactly-once test: a flow whose 'book' step writes a row in the same database
// as the log, inside the transaction that records the step. LOOM_TX_KILL says where this
// process kills itself: 'inside' (after the row is written, before commit) or 'after' (after the
// commit, before the flow goes on); '' runs to the end. LOOM_TX_BACKEND: sqlite | postgres.
import type Database from 'better-sqlite3';
import pg from 'pg';
import type { EventStore, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';

const [target, executionId] = process.argv.slice(2) as [string, string];
const kill = process.env.LOOM_TX_KILL ?? '';
const backend = process.env.LOOM_TX_BACKEND ?? 'sqlite';

const sqliteBook = (tx: unknown) => {
  const database = tx as Database.Database;
  database.prepare('INSERT INTO bookings (execution_id) VALUES (?)').run(executionId);
  if (kill === 'inside') process.kill(process.pid, 'SIGKILL');
  return database.prepare('SELECT count(*) AS n FROM bookings').get() as { n: number };
};

const postgresBook = async (tx: unknown) => {
  const client = tx as pg.PoolClient;
  await client.query(`INSERT INTO "${target}".bookings (execution_id) VALUES ($1)`, [executionId]);
  if (kill === 'inside') process.kill(process.pid, 'SIGKILL');
  const rows = await client.query(`SELECT count(*)::int AS n FROM "${target}".bookings`);
  return { n: rows.rows[0].n as number };
};

const flow: Flow<null, string> = {
  name: 'booking',
  run: async (ctx) => {
    await ctx.step('quote', () => 42);
    const booked = await ctx.transaction('book', backend === 'sqlite' ? sqliteBook : postgresBook);
    if (kill === 'after') process.kill(process.pid, 'SIGKILL');
    return ctx.step('confirm', () => `booked ${booked.n}`);
  },
};

let store: EventStore;
if (backend === 'sqlite') {
  const sqlite = SqliteEventStore.open({ path: target, migrate: true });
  sqlite.database.exec('CREATE TABLE IF NOT EXISTS bookings (execution_id TEXT NOT NULL)');
  store = sqlite;
} else {
  const postgres = await PostgresEventStore.open({
    connectionString: process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test',
    schema: target,
  });
  await postgres.migrate();
  const setup = new pg.Client({
    connectionString: process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test',
  });
  await setup.connect();
  await setup.query(`CREATE TABLE IF NOT EXISTS "${target}".bookings (execution_id text NOT NULL)`);
  await setup.end();
  store = postgres;
}
const runtime = createKernelRuntime({
  store,
  flows: [flow as Flow<never, unknown>],
  recoverQuietMs: 0,
});
await runtime.recover();
const handle = await runtime.start(flow, null, { executionId });
process.stdout.write(`${JSON.stringify({ result: await handle.result() })}\n`);
await runtime.shutdown();
await store.close();
