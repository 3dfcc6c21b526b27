import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { freshId } from '../../testing/event-store-conformance.js';
import { migrate } from './migrate.js';
import { openPostgres, type PostgresBackend } from './open-postgres.js';

const db = useThrowawaySchemas();

/**
 * A role whose sessions default to SERIALIZABLE, as CockroachDB's do: what the server's default
 * would do to the store's statements if the store did not say READ COMMITTED itself.
 */
const role = `loom_serializable_${randomBytes(4).toString('hex')}`;
const roleUrl = (() => {
  const url = new URL(pgTestUrl);
  url.username = role;
  url.password = '';
  return url.toString();
})();

let schema: string;

beforeAll(async () => {
  schema = db.freshSchema();
  await migrate({ pool: db.admin, schema });
  const s = `"${schema}"`;
  await db.admin.query(`CREATE ROLE ${role} LOGIN`);
  await db.admin.query(`ALTER ROLE ${role} SET default_transaction_isolation = 'serializable'`);
  // Every write of the store's tables below records the isolation of the transaction it ran in,
  // as the server saw it.
  await db.admin.query(`CREATE TABLE ${s}.isolation_probe (
    at_table text NOT NULL, op text NOT NULL, isolation text NOT NULL)`);
  await db.admin.query(`CREATE FUNCTION ${s}.record_isolation() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${s}.isolation_probe VALUES (TG_TABLE_NAME, TG_OP, current_setting('transaction_isolation'));
      RETURN NULL;
    END $$`);
  for (const [table, op] of [
    ['events', 'INSERT'],
    ['signals', 'INSERT'],
    ['queue_items', 'UPDATE'],
    ['leases', 'INSERT'],
  ]) {
    await db.admin.query(
      `CREATE TRIGGER probe_${table} AFTER ${op} ON ${s}.${table} FOR EACH ROW EXECUTE FUNCTION ${s}.record_isolation()`,
    );
  }
  await db.admin.query(`GRANT USAGE ON SCHEMA ${s} TO ${role}`);
  await db.admin.query(`GRANT ALL ON ALL TABLES IN SCHEMA ${s} TO ${role}`);
  await db.admin.query(`GRANT ALL ON ALL SEQUENCES IN SCHEMA ${s} TO ${role}`);
});

afterAll(async () => {
  await db.dropSchema(schema);
  await db.admin.query(`DROP OWNED BY ${role}`);
  await db.admin.query(`DROP ROLE IF EXISTS ${role}`);
});

async function probe(): Promise<Record<string, string[]>> {
  const rows = await db.admin.query<{ at_table: string; isolation: string }>(
    `DELETE FROM "${schema}".isolation_probe RETURNING at_table, isolation`,
  );
  const seen: Record<string, string[]> = {};
  for (const row of rows.rows) {
    const list = seen[row.at_table] ?? [];
    if (!list.includes(row.isolation)) list.push(row.isolation);
    seen[row.at_table] = list;
  }
  return seen;
}

/**
 * The store's autocommit statements (append, sendSignal, a lease acquire), its own transactions
 * (`transact`, the queue claim); returns what `SHOW transaction_isolation` answered inside the
 * transaction `transact` opened, and the isolations the probe recorded per table.
 */
async function exercise(backend: PostgresBackend): Promise<{
  insideTransact: string;
  byTable: Record<string, string[]>;
}> {
  await probe();
  const executionId = freshId('isolation');
  await backend.events.append([
    { executionId, sequence: 0, type: 'execution.started', payload: {} },
  ]);
  await backend.events.sendSignal({ executionId, name: 'go', payload: 1 });
  await backend.leases.acquireMany('node-a', [executionId], 30_000);
  let insideTransact = '';
  await backend.events.transact(
    async (tx) => {
      const answer = await (tx as pg.ClientBase).query('SHOW transaction_isolation');
      insideTransact = answer.rows[0].transaction_isolation as string;
    },
    () => [{ executionId, sequence: 1, type: 'step.started', payload: {} }],
  );
  await backend.queues.enqueue({ queue: 'q', flow: 'f', input: 1 });
  const claimed = await backend.queues.claim('q', { owner: 'w', limit: 1, claimTtlMs: 30_000 });
  expect(claimed).toHaveLength(1);
  return { insideTransact, byTable: await probe() };
}

describe('the store runs READ COMMITTED whatever the server default', () => {
  it('on a pool Loom creates: every statement, autocommit or in a transaction, is READ COMMITTED for a role whose default is SERIALIZABLE', async () => {
    const backend = await openPostgres({ connectionString: roleUrl, schema });
    try {
      const { insideTransact, byTable } = await exercise(backend);
      expect(insideTransact).toBe('read committed');
      expect(byTable).toEqual({
        events: ['read committed'],
        signals: ['read committed'],
        leases: ['read committed'],
        queue_items: ['read committed'],
      });
    } finally {
      await backend.close();
    }
  });

  it("on the caller's pool: the store's transactions still say READ COMMITTED; its autocommit statements keep the pool's default (the control: the role really is SERIALIZABLE)", async () => {
    const pool = new pg.Pool({ connectionString: roleUrl, max: 3 });
    const backend = await openPostgres({ pool, schema });
    try {
      const { insideTransact, byTable } = await exercise(backend);
      expect(insideTransact).toBe('read committed');
      // The queue claim is a transaction the store opens; transact's append too.
      expect(byTable.queue_items).toEqual(['read committed']);
      expect(byTable.events?.sort()).toEqual(['read committed', 'serializable']);
      // sendSignal and the lease acquire are single statements: the pool's default applies.
      expect(byTable.signals).toEqual(['serializable']);
      expect(byTable.leases).toEqual(['serializable']);
    } finally {
      await backend.close();
      await pool.end();
    }
  });
});
