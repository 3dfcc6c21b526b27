import pg from 'pg';
import { afterAll } from 'vitest';
import { CoalescingEventStore } from '../coalescing-event-store.js';
import type { EventStore } from '../event-store.js';
import type { PostgresEventStore } from '../store/postgres/postgres-event-store.js';
import type { ManualClock } from '../testing/manual-clock.js';
import { postgresRuntimeHarness } from '../testing/postgres-harness.js';
import { type RuntimeHarness, runtimeConformance } from '../testing/runtime-conformance.js';

const url = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schemas: string[] = [];
let counter = 0;
const admin = new pg.Pool({ connectionString: url, max: 2 });

afterAll(async () => {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

/**
 * The stores of a fresh schema on a manual clock; `wrap` decorates the event store the runtime
 * sees (its close closes the Postgres store under it). Closing drops the schema.
 */
function harness(
  prefix: string,
  wrap?: (store: PostgresEventStore, clock: ManualClock) => EventStore,
  mode: { notifications?: 'listen' | 'poll' } = {},
): () => Promise<RuntimeHarness> {
  return async () => {
    const schema = `${prefix}_${process.pid}_${++counter}`;
    schemas.push(schema);
    const opened = await postgresRuntimeHarness(
      { connectionString: url, schema, ...mode },
      wrap === undefined ? {} : { wrap },
    );
    return {
      ...opened,
      close: async () => {
        await opened.close();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      },
    };
  };
}

runtimeConformance('postgres', harness('loom_rt'));

// The poll mode (ADR 0057): no LISTEN, no NOTIFY; a handle's result and every subscription are
// woken by the store's tip poll on the harness's manual clock, or by this process's own appends.
runtimeConformance(
  "postgres, notifications: 'poll'",
  harness('loom_rtp', undefined, { notifications: 'poll' }),
);

// What a runtime would see if the coalescing store were the Postgres default (ADR 0030). The store
// changes only append (its other calls are proven forwarded in coalescing-event-store.test.ts), so
// the sections run again here are those whose appends it queues and batches.
runtimeConformance(
  'coalescing over postgres',
  harness('loom_rtc', (store, clock) => new CoalescingEventStore(store, { clock })),
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
