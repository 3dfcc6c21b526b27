// The LISTEN connection against the real server: however fast subscriptions come and go, it runs
// one query at a time (pg 8 queues concurrent queries on a client but warns, a DeprecationWarning
// in the user's process, and pg 9 drops the queue), and the server ends up listening to exactly
// the channels still retained.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { pgTestUrl } from '../../../test/support/throwaway-schemas.js';
import { systemClock } from '../../clock.js';
import { until } from '../../testing/until.js';
import { BucketListener } from './bucket-listener.js';

const pool = new pg.Pool({ connectionString: pgTestUrl, max: 2 });
afterAll(() => pool.end());

/** A listener whose connection counts the queries in flight on it at once, and the most seen. */
function countedListener() {
  const counts = { inFlight: 0, most: 0, queries: 0 };
  const listener = new BucketListener({
    connect: async () => {
      const client = await pool.connect();
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: typeof query }).query = async (...args: unknown[]) => {
        counts.inFlight += 1;
        counts.queries += 1;
        counts.most = Math.max(counts.most, counts.inFlight);
        try {
          return await query(...args);
        } finally {
          counts.inFlight -= 1;
        }
      };
      return client;
    },
    onNotification: () => {},
    onReconnect: () => {},
    clock: systemClock,
  });
  return { listener, counts };
}

describe('BucketListener', () => {
  it('retains and releases issued all at once reach the server one query at a time, and it listens to exactly what is retained', async () => {
    const { listener, counts } = countedListener();
    try {
      const channel = (index: number) => `loom_bl_${process.pid}_${index}`;
      const listening = new Set<number>();
      const releases = Array.from({ length: 30 }, (_, index) =>
        listener.retain([channel(index)], () => listening.add(index)),
      );
      // The first retain connects; wait for it, then change the set many times without waiting.
      await until(() => listening.has(0), 'the first LISTEN', 10_000);
      const later = Array.from({ length: 20 }, (_, index) =>
        listener.retain([channel(100 + index)], () => listening.add(100 + index)),
      );
      for (let index = 0; index < 30; index += 2) releases[index]?.();
      await until(
        () => Array.from({ length: 20 }, (_, index) => 100 + index).every((i) => listening.has(i)),
        'every later LISTEN in effect',
        10_000,
      );
      const expected = [
        ...Array.from({ length: 15 }, (_, index) => channel(2 * index + 1)),
        ...Array.from({ length: 20 }, (_, index) => channel(100 + index)),
      ].sort();
      expect(await listener.channelsOnServer()).toEqual(expected);
      expect(counts.queries).toBeGreaterThan(2);
      expect(counts.most).toBe(1);
      for (const release of later) release();
    } finally {
      await listener.close();
    }
  });
});
