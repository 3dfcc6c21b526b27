// A rolling upgrade with a queue: worker B's runtime lacks flow F, worker C's has it. B claims
// first and must leave F's items pending, so C takes them at its next claim instead of after B's
// claim expired (issue 27, item 6: the queue-claim way of waking an execution).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, openMemory } from '@loom/event-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime, defineFlow } from '../../src/index.js';
import { openPostgres } from '../../src/postgres.js';
import { openSqlite } from '../../src/sqlite.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-rolling-queue-'));
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const drop of drops) await drop();
  rmSync(directory, { recursive: true, force: true });
});
let counter = 0;

/** Opens one database twice (two workers' connections); the memory backend is shared. */
const targets: Array<[string, () => () => Promise<Backend>]> = [
  [
    'memory',
    () => {
      const backend = openMemory();
      return async () => backend;
    },
  ],
  [
    'sqlite',
    () => {
      const path = join(directory, `queue-${++counter}.db`);
      return async () => openSqlite({ path, migrate: true });
    },
  ],
  [
    'postgres',
    () => {
      const schema = `loom_rolling_queue_${process.pid}_${++counter}`;
      drops.push(async () => {
        const backend = await openPostgres({ connectionString: pgUrl, schema });
        await backend.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await backend.close();
      });
      return () => openPostgres({ connectionString: pgUrl, schema, migrate: true });
    },
  ],
];

const oldFlow = defineFlow({ name: 'old-job' }, async (ctx) => ctx.step('work', () => 'old'));
const newFlow = defineFlow({ name: 'new-job' }, async (ctx) => ctx.step('work', () => 'new'));

/** `backend` with every queue claim counted by `claimed` once it returned. */
function counting(backend: Backend, claimed: () => void): Backend {
  const queues = new Proxy(backend.queues, {
    get(target, property) {
      if (property === 'claim') {
        return async (...args: Parameters<Backend['queues']['claim']>) => {
          const items = await target.claim(...args);
          claimed();
          return items;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return new Proxy(backend, {
    get(target, property) {
      if (property === 'queues') return queues;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Resolves with `work`, or fails naming `what` after 15 s. */
async function within<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after 15 s waiting for ${what}`)), 15_000);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe.each(targets)('queue workers of a rolling upgrade on %s', (_name, fresh) => {
  it('a worker whose runtime lacks the flow leaves its items pending: the worker that has it claims them at once', async () => {
    const open = fresh();
    const errorsOfB: unknown[] = [];
    // B's claims are counted, so the test knows B had its chance at the item first.
    let claimsOfB = 0;
    const backendOfB = await open();
    const b = createRuntime({
      backend: counting(backendOfB, () => {
        claimsOfB += 1;
      }),
      flows: [oldFlow],
      timerPollMs: 0,
      onError: (error) => errorsOfB.push(error),
    });
    const c = createRuntime({ backend: await open(), flows: [oldFlow, newFlow], timerPollMs: 0 });
    try {
      await c.enqueue('jobs', newFlow, null, { itemId: 'new-1' });
      // B claims first, twice; its claim expiry is far off, so only a claim B never made lets
      // C take the item within the deadline.
      const workerB = b.work('jobs', { pollMs: 20, claimTtlMs: 60_000 });
      await within(
        (async () => {
          for (const deadline = Date.now() + 15_000; claimsOfB < 2; ) {
            if (Date.now() > deadline) throw new Error('B never claimed twice');
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        })(),
        'B to claim from the queue twice',
      );
      const workerC = c.work('jobs', { pollMs: 20, claimTtlMs: 60_000 });
      const result = (async () => {
        // Started by whichever worker claims the item: until then the log has no execution.
        for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
          const status = await c.status('queue:jobs:new-1').catch(() => undefined);
          if (status !== undefined) return c.attach<string>('queue:jobs:new-1').result();
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        throw new Error('timed out after 15 s waiting for a worker to start new-1');
      })();
      expect(await within(result, 'new-1 to run on the worker that has its flow')).toBe('new');
      await workerB.stop();
      await workerC.stop();
      expect(errorsOfB).toEqual([]);
    } finally {
      await b.shutdown();
      await c.shutdown();
    }
  });
});
