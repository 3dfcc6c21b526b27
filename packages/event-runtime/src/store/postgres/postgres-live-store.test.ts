import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { liveStoreConformance } from '../../testing/live-store-conformance.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { migrate } from './migrate.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { PostgresLiveStore } from './postgres-live-store.js';

const db = useThrowawaySchemas();

/** Once with LISTEN/NOTIFY, once in the poll mode (no LISTEN, no NOTIFY; ADR 0057). */
const modes = [
  { name: 'postgres', options: {} },
  {
    name: "postgres, notifications: 'poll'",
    options: { notifications: 'poll', pollIntervalMs: 50 },
  },
] as const;

for (const mode of modes)
  liveStoreConformance(mode.name, async () => {
    const schema = db.freshSchema();
    await migrate({ pool: db.admin, schema });
    const clock = new ManualClock(1_000);
    // The store shares its event store's pool, as a backend does; each peer has a pool of its own.
    const events = await PostgresEventStore.open({
      connectionString: pgTestUrl,
      schema,
      ...mode.options,
    });
    const store = await PostgresLiveStore.open({
      pool: events.connectionPool,
      schema,
      clock,
      ...mode.options,
    });
    const peers: PostgresLiveStore[] = [];
    return {
      store,
      clock,
      openPeer: async () => {
        const peer = await PostgresLiveStore.open({
          connectionString: pgTestUrl,
          schema,
          ...mode.options,
        });
        peers.push(peer);
        return peer;
      },
      close: async () => {
        await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
        await events.close();
        await db.dropSchema(schema);
      },
    };
  });
