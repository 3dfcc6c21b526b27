import { pgTestUrl, useThrowawaySchemas } from '../../test/support/throwaway-schemas.js';
import { CoalescingEventStore } from '../coalescing-event-store.js';
import type { EventStore } from '../event-store.js';
import type { PostgresEventStore } from '../store/postgres/postgres-event-store.js';
import type { ManualClock } from '../testing/manual-clock.js';
import { postgresRuntimeHarness } from '../testing/postgres-harness.js';
import { type RuntimeHarness, runtimeConformance } from '../testing/runtime-conformance.js';

const db = useThrowawaySchemas();

/**
 * The stores of a migrated schema with no rows (emptied after the test before it, or new) on a
 * manual clock; `wrap` decorates the event store the runtime sees (its close closes the Postgres
 * store under it). Closing empties the schema for the next test.
 */
function harness(
  wrap?: (store: PostgresEventStore, clock: ManualClock) => EventStore,
  mode: { notifications?: 'listen' | 'poll' } = {},
): () => Promise<RuntimeHarness> {
  return async () => {
    const schema = await db.migratedSchema();
    const opened = await postgresRuntimeHarness(
      { connectionString: pgTestUrl, schema, ...mode },
      wrap === undefined ? {} : { wrap },
    );
    return {
      ...opened,
      close: async () => {
        await opened.close();
        await db.releaseSchema(schema);
      },
    };
  };
}

runtimeConformance('postgres', harness());

// The poll mode (ADR 0057): no LISTEN, no NOTIFY; a handle's result and every subscription are
// woken by the store's tip poll on the harness's manual clock, or by this process's own appends.
runtimeConformance(
  "postgres, notifications: 'poll'",
  harness(undefined, { notifications: 'poll' }),
);

// What a runtime would see if the coalescing store were the Postgres default (ADR 0030). The store
// changes only append (its other calls are proven forwarded in coalescing-event-store.test.ts), so
// the sections run again here are those whose appends it queues and batches.
runtimeConformance(
  'coalescing over postgres',
  harness((store, clock) => new CoalescingEventStore(store, { clock })),
  {
    sections: [
      'steps and barriers',
      'replay and resume',
      'transient store failures',
      'durable time, signals, values, versions, children, continue-as-new',
      'cancel',
    ],
  },
);
