// The flow of the per-key concurrency process test, and the table it records itself in. Each run
// enters (a row in flowctl_running, keyed by item, and an observation of how many runs of its
// tenant are in that table at that moment, taken under a lock of the tenant), works a while,
// then exits (its row deleted, a row in flowctl_done). Enter and exit are idempotent, so a step
// re-run after a SIGKILL records no second run.
import { openPostgres, type PostgresBackend } from '@loom/event-runtime/postgres';
import { openSqlite, type SqliteBackend } from '@loom/event-runtime/sqlite';
import { defineFlow } from '../../src/index.js';

/** The limit of every tenant, the tenants, and the items the test enqueues. */
export const tenantLimit = 2;
export const tenants = ['t0', 't1', 't2', 't3'];
export const itemCount = 48;
export const workMs = 250;

export interface TenantInput {
  id: string;
  tenant: string;
}

/** The recording side of a backend: what a run does at enter and at exit. */
export interface Recorder {
  enter(input: TenantInput, pid: number): Promise<void>;
  exit(input: TenantInput, pid: number): Promise<void>;
}

export const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** `sqlite:<path>` or `postgres:<schema>`: a backend on it (migrated by the test beforehand). */
export async function openTarget(target: string): Promise<SqliteBackend | PostgresBackend> {
  return target.startsWith('sqlite:')
    ? openSqlite({ path: target.slice('sqlite:'.length), busyTimeoutMs: 10_000 })
    : openPostgres({ connectionString: pgUrl, schema: target.slice('postgres:'.length) });
}

/** Creates the three tables beside Loom's (the test calls it once before the workers start). */
export async function createTables(backend: SqliteBackend | PostgresBackend): Promise<void> {
  const ddl = [
    'CREATE TABLE flowctl_running (item_id text PRIMARY KEY, tenant text NOT NULL, pid integer NOT NULL)',
    'CREATE TABLE flowctl_seen (item_id text NOT NULL, tenant text NOT NULL, running integer NOT NULL)',
    'CREATE TABLE flowctl_done (item_id text PRIMARY KEY, pid integer NOT NULL)',
  ];
  if (backend.kind === 'sqlite') {
    for (const statement of ddl) backend.events.database.exec(statement);
  } else {
    const q = `"${backend.schema}"`;
    for (const statement of ddl) {
      await backend.events.connectionPool.query(statement.replace(/TABLE (\w+)/, `TABLE ${q}.$1`));
    }
  }
}

/** What enter and exit write, on the backend's own connection. */
export function recorderOf(backend: SqliteBackend | PostgresBackend): Recorder {
  if (backend.kind === 'sqlite') {
    const db = backend.events.database;
    const insert = db.prepare(
      'INSERT INTO flowctl_running (item_id, tenant, pid) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
    );
    const count = db.prepare('SELECT count(*) FROM flowctl_running WHERE tenant = ?').pluck();
    const seen = db.prepare('INSERT INTO flowctl_seen (item_id, tenant, running) VALUES (?, ?, ?)');
    const remove = db.prepare('DELETE FROM flowctl_running WHERE item_id = ?');
    const done = db.prepare(
      'INSERT INTO flowctl_done (item_id, pid) VALUES (?, ?) ON CONFLICT DO NOTHING',
    );
    // IMMEDIATE: the write lock first, so the count is of every process's committed rows.
    const enter = db.transaction((input: TenantInput, pid: number) => {
      insert.run(input.id, input.tenant, pid);
      seen.run(input.id, input.tenant, count.get(input.tenant));
    });
    const exit = db.transaction((input: TenantInput, pid: number) => {
      remove.run(input.id);
      done.run(input.id, pid);
    });
    return {
      enter: async (input, pid) => enter.immediate(input, pid),
      exit: async (input, pid) => exit.immediate(input, pid),
    };
  }
  const pool = backend.events.connectionPool;
  const q = `"${backend.schema}"`;
  const transaction = async (statements: Array<[string, unknown[]]>) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      for (const [text, values] of statements) await client.query(text, values);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
  return {
    // The tenant's advisory lock serializes enters of one tenant, so each count is exact.
    enter: (input, pid) =>
      transaction([
        ['SELECT pg_advisory_xact_lock(hashtext($1))', [input.tenant]],
        [
          `INSERT INTO ${q}.flowctl_running (item_id, tenant, pid) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
          [input.id, input.tenant, pid],
        ],
        [
          `INSERT INTO ${q}.flowctl_seen (item_id, tenant, running)
           SELECT $1, $2, count(*) FROM ${q}.flowctl_running WHERE tenant = $2`,
          [input.id, input.tenant],
        ],
      ]),
    exit: (input, pid) =>
      transaction([
        [`DELETE FROM ${q}.flowctl_running WHERE item_id = $1`, [input.id]],
        [
          `INSERT INTO ${q}.flowctl_done (item_id, pid) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
          [input.id, pid],
        ],
      ]),
  };
}

/** The flow: at most `tenantLimit` runs per tenant at once, across every worker. */
export function tenantFlow(recorder: Recorder | undefined) {
  return defineFlow(
    {
      name: 'tenant-job',
      concurrency: { key: (input: TenantInput) => input.tenant, limit: tenantLimit },
    },
    async (ctx, input) => {
      await ctx.step('enter', () => recorder?.enter(input, process.pid));
      await ctx.step('work', () => new Promise<void>((resolve) => setTimeout(resolve, workMs)));
      await ctx.step('exit', () => recorder?.exit(input, process.pid));
      return input.id;
    },
  );
}
