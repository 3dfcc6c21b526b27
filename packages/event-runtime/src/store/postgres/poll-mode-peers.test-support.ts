// A store conformance suite's harness on whole backends opened in the poll mode (ADR 0057: no
// LISTEN, no NOTIFY): the store of one backend, each peer a backend of its own (as two processes
// would have), on an emptied migrated schema that goes back to the pool when the suite closes.
import type { ThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { openPostgres, type PostgresBackend } from './open-postgres.js';

export async function pollModePeers<S>(
  db: ThrowawaySchemas,
  url: string,
  pick: (backend: PostgresBackend) => S,
): Promise<{
  store: S;
  clock: ManualClock;
  openPeer: () => Promise<S>;
  close: () => Promise<void>;
}> {
  const schema = await db.migratedSchema();
  const clock = new ManualClock();
  const open = (migrateSchema: boolean) =>
    openPostgres({
      connectionString: url,
      schema,
      clock,
      notifications: 'poll',
      pollIntervalMs: 50,
      migrate: migrateSchema,
    });
  const backend = await open(true);
  const peers: PostgresBackend[] = [];
  return {
    store: pick(backend),
    clock,
    openPeer: async () => {
      const peer = await open(false);
      peers.push(peer);
      return pick(peer);
    },
    close: async () => {
      await Promise.all([backend.close(), ...peers.map((peer) => peer.close())]);
      await db.releaseSchema(schema);
    },
  };
}
