// The runtime suite over CoalescingEventStore on Postgres: what a runtime would see if the
// coalescing store were the Postgres default (ADR 0030).
import pg from 'pg';
import { afterAll } from 'vitest';
import { CoalescingEventStore } from '../coalescing-event-store.js';
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

runtimeConformance('coalescing over postgres', async () => {
  const clock = new ManualClock();
  const schema = `loom_rtc_${process.pid}_${++counter}`;
  schemas.push(schema);
  const postgres = await PostgresEventStore.open({ connectionString: url, schema, clock });
  await postgres.migrate();
  const store = new CoalescingEventStore(postgres, { clock });
  const leases = await PostgresLeaseStore.open({ pool: postgres.connectionPool, schema, clock });
  const snapshots = await PostgresSnapshotStore.open({ pool: postgres.connectionPool, schema });
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
