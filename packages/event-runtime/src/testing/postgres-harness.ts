import { PostgresEventStore } from '../store/postgres/postgres-event-store.js';
import { PostgresLeaseStore } from '../store/postgres/postgres-lease-store.js';
import { PostgresSnapshotStore } from '../store/postgres/postgres-snapshot-store.js';
import type { PostgresEventStoreOptions } from '../store/postgres/postgres-store-options.js';
import type { DurableHarness, DurableHarnessOptions } from './durable-harness.js';
import { ManualClock } from './manual-clock.js';

/**
 * The stores of a fresh Postgres `schema` (migrated) on a manual clock, for `runtimeConformance`
 * (`notifications` and `pollIntervalMs` as `PostgresEventStore.open` takes them):
 * the event store (decorated by `wrap`), the lease and snapshot stores on its pool, and a row
 * count. Closing closes them; dropping the schema is the caller's.
 *
 * @example
 * runtimeConformance('my decorator over postgres', () =>
 *   postgresRuntimeHarness(
 *     { connectionString: 'postgres://root@127.0.0.1:5432/test', schema: `t_${process.pid}` },
 *     { wrap: (store) => new MyDecorator(store) },
 *   ),
 * );
 */
export async function postgresRuntimeHarness(
  target: { connectionString: string; schema: string } & Pick<
    PostgresEventStoreOptions,
    'notifications' | 'pollIntervalMs'
  >,
  options: DurableHarnessOptions<PostgresEventStore> = {},
): Promise<DurableHarness<PostgresEventStore>> {
  const clock = new ManualClock();
  const { schema } = target;
  const inner = await PostgresEventStore.open({ ...target, clock });
  await inner.migrate();
  const store = options.wrap === undefined ? inner : await options.wrap(inner, clock);
  const pool = inner.connectionPool;
  const leases = await PostgresLeaseStore.open({ pool, schema, clock });
  const snapshots = await PostgresSnapshotStore.open({ pool, schema });
  return {
    inner,
    store,
    leases,
    snapshots,
    clock,
    countRows: async (executionId) =>
      Number(
        (
          await pool.query(`SELECT count(*) AS n FROM "${schema}".events WHERE execution_id = $1`, [
            executionId,
          ])
        ).rows[0].n,
      ),
    ...(options.snapshotsPaired === undefined ? {} : { snapshotsPaired: options.snapshotsPaired }),
    close: async () => {
      await leases.close();
      await snapshots.close();
      await store.close();
    },
  };
}
