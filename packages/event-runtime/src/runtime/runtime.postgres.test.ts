import pg from 'pg';
import { afterAll } from 'vitest';
import { PostgresEventStore } from '../store/postgres/postgres-event-store.js';
import { PostgresLeaseStore } from '../store/postgres/postgres-lease-store.js';
import { PostgresSnapshotStore } from '../store/postgres/postgres-snapshot-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { runtimeConformance } from '../testing/runtime-conformance.js';

const url = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schemas: string[] = [];
let counter = 0;
const admin = new pg.Pool({ connectionString: url, max: 2 });

afterAll(async () => {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

runtimeConformance('postgres', async () => {
  const clock = new ManualClock();
  const schema = `loom_rt_${process.pid}_${++counter}`;
  schemas.push(schema);
  const store = await PostgresEventStore.open({ connectionString: url, schema, clock });
  await store.migrate();
  const leases = await PostgresLeaseStore.open({ pool: store.connectionPool, schema, clock });
  const snapshots = await PostgresSnapshotStore.open({ pool: store.connectionPool, schema });
  return {
    store,
    leases,
    snapshots,
    clock,
    countRows: async (executionId) =>
      Number(
        (
          await admin.query(
            `SELECT count(*) AS n FROM "${schema}".events WHERE execution_id = $1`,
            [executionId],
          )
        ).rows[0].n,
      ),
    close: async () => {
      await leases.close();
      await snapshots.close();
      await store.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  };
});
