import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../../../test/support/throwaway-schemas.js';
import { ErrorCode } from '../../errors.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { queueStoreConformance } from '../../testing/queue-store-conformance.js';
import { migrate } from './migrate.js';
import { pollModePeers } from './poll-mode-peers.test-support.js';
import { PostgresQueueStore } from './postgres-queue-store.js';

const db = useThrowawaySchemas();
const { freshSchema } = db;

const url = pgTestUrl;

queueStoreConformance('postgres', async () => {
  // A migrated schema emptied after the test before it (or a new one): as fresh, without migrating it.
  const schema = await db.migratedSchema();
  const clock = new ManualClock();
  // Two pools, as two processes would have: claims really run concurrently on the server.
  const pools = [new pg.Pool({ connectionString: url, max: 3 })];
  const store = await PostgresQueueStore.open({ pool: pools[0] as pg.Pool, schema, clock });
  const peers: PostgresQueueStore[] = [];
  return {
    store,
    clock,
    openPeer: async () => {
      const pool = new pg.Pool({ connectionString: url, max: 3 });
      pools.push(pool);
      const peer = await PostgresQueueStore.open({ pool, schema, clock });
      peers.push(peer);
      return peer;
    },
    close: async () => {
      await store.close();
      for (const peer of peers) await peer.close();
      for (const pool of pools) await pool.end();
      await db.releaseSchema(schema);
    },
  };
});

// The same suite on the queue store of a whole backend opened in the poll mode (ADR 0057: no
// LISTEN, no NOTIFY), each peer a backend of its own, as two processes would have.
queueStoreConformance("postgres, notifications: 'poll'", () =>
  pollModePeers(db, url, (backend) => backend.queues),
);

describe('PostgresQueueStore', () => {
  it('claims of many connections racing on one queue never exceed concurrencyMax or a partition limit', async () => {
    const schema = freshSchema();
    await migrate({ pool: db.admin, schema });
    const pools = [0, 1].map(() => new pg.Pool({ connectionString: url, max: 4 }));
    const stores = await Promise.all(
      pools.map((pool) => PostgresQueueStore.open({ pool, schema })),
    );
    try {
      const queue = 'race';
      for (let index = 0; index < 60; index++) {
        await stores[0]?.enqueue({
          queue,
          itemId: `i-${index}`,
          flow: 'f',
          input: index,
          partitionKey: `p-${index % 3}`,
        });
      }
      const held = new Set<string>();
      let done = 0;
      for (let round = 0; done < 60; round++) {
        // Two items finish per round: a round that frees nothing would loop forever.
        if (round >= 100) throw new Error(`only ${done} of 60 items finished in 100 rounds`);
        const claims = await Promise.all(
          Array.from({ length: 8 }, (_, index) =>
            (stores[index % 2] as PostgresQueueStore).claim(queue, {
              owner: `w-${index}`,
              limit: 3,
              concurrencyMax: 4,
              partitionConcurrencyMax: 2,
              claimTtlMs: 60_000,
            }),
          ),
        );
        for (const item of claims.flat()) held.add(item.itemId);
        expect(held.size).toBeLessThanOrEqual(4);
        const perPartition = new Map<string, number>();
        for (const id of held) {
          const key = `p-${Number(id.slice(2)) % 3}`;
          perPartition.set(key, (perPartition.get(key) ?? 0) + 1);
        }
        expect(Math.max(...perPartition.values())).toBeLessThanOrEqual(2);
        const finished = [...held].slice(0, 2);
        await stores[1]?.complete(queue, finished);
        for (const id of finished) held.delete(id);
        done += finished.length;
      }
    } finally {
      for (const store of stores) await store.close();
      for (const pool of pools) await pool.end();
    }
  });

  it('refuses a schema before migration 4 with SCHEMA_NOT_MIGRATED', async () => {
    const schema = freshSchema();
    const queues = await PostgresQueueStore.open({ pool: db.admin, schema });
    await expect(queues.enqueue({ queue: 'q', flow: 'f', input: 1 })).rejects.toMatchObject({
      code: ErrorCode.SCHEMA_NOT_MIGRATED,
    });
    await migrate({ pool: db.admin, schema });
    expect((await queues.enqueue({ queue: 'q', flow: 'f', input: 1 })).duplicate).toBe(false);
    await queues.close();
  });
});
