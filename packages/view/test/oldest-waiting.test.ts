// view.oldestWaiting, the queues panel's "oldest waiting" column, on a real SQLite file, real
// Postgres and the memory backend: the first item by enqueue order that is pending or whose
// claim expired, never one under a live claim or finished; one query per queue, counted.
import { type Backend, openMemory } from '@loom/event-runtime';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type PageReader,
  postgresPageReader,
  sqlitePageReader,
} from '../src/internal/page-reader.js';
import { type View, viewOver } from '../src/open-view.js';
import { until } from './dashboard-support.js';
import { dbTargets, pgUrl } from './db-targets.js';

const { targets, cleanup } = dbTargets('view-oldest-waiting');
afterAll(cleanup);

/** Counts the calls of every method of `target` by name into `calls`. */
function counting<T extends object>(target: T, calls: Map<string, number>, prefix: string): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const name = `${prefix}${String(property)}`;
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return value.apply(object, args);
      };
    },
  });
}

describe.each(targets)('oldestWaiting on $name', (target) => {
  const calls = new Map<string, number>();
  let backend: Backend;
  let view: View;
  let pool: pg.Pool | undefined;

  beforeAll(async () => {
    backend = await target.open();
    let pages: PageReader;
    if (target.name === 'sqlite') {
      pages = sqlitePageReader((backend.events as unknown as { database: never }).database);
    } else {
      pool = new pg.Pool({ connectionString: pgUrl });
      const schema = new URL(target.db).searchParams.get('schema') as string;
      pages = postgresPageReader(counting(pool, calls, 'pg.'), schema);
    }
    view = viewOver(backend, counting(pages, calls, 'pages.'));
    const q = backend.queues;
    for (const itemId of ['a', 'b', 'c']) {
      await q.enqueue({ queue: 'mail', itemId, flow: 'send', version: 'v2', input: { itemId } });
    }
    await q.enqueue({ queue: 'done', itemId: 'x', flow: 'tidy', input: null });
  });
  afterAll(async () => {
    await pool?.end();
    await backend?.close();
  });

  it('is the first item by enqueue order that waits: a live claim or a finished item is not, an expired claim is', async () => {
    const first = await view.oldestWaiting('mail');
    expect(first).toMatchObject({ itemId: 'a', flow: 'send', version: 'v2' });
    expect(Math.abs((first?.enqueuedAtMs ?? 0) - Date.now())).toBeLessThan(600_000);
    // A worker claims the oldest (highest priority first, then enqueue order): b is oldest now.
    const [claimed] = await backend.queues.claim('mail', {
      owner: 'w1',
      limit: 1,
      claimTtlMs: 60_000,
    });
    expect(claimed?.itemId).toBe('a');
    expect((await view.oldestWaiting('mail'))?.itemId).toBe('b');
    // A claim that has expired waits again (any worker may claim it): a is the oldest again.
    const [shortClaim] = await backend.queues.claim('done', {
      owner: 'w1',
      limit: 1,
      claimTtlMs: 1,
    });
    expect(shortClaim?.itemId).toBe('x');
    const expired = await until(
      async () => ((await view.oldestWaiting('done'))?.itemId === 'x' ? true : undefined),
      'the 1 ms claim of x to expire and x to wait again',
    );
    expect(expired).toBe(true);
    // Finished, it no longer waits: nothing does.
    await backend.queues.complete('done', ['x']);
    expect(await view.oldestWaiting('done')).toBeNull();
    expect(await view.oldestWaiting('no-such-queue')).toBeNull();
  });

  it('costs one query per queue', async () => {
    calls.clear();
    const queues = await view.queues();
    expect(queues.map((queue) => queue.queue)).toEqual(['done', 'mail']);
    for (const queue of queues) await view.oldestWaiting(queue.queue);
    expect(calls.get('pages.oldestWaiting')).toBe(2);
    if (target.name === 'postgres') expect(calls.get('pg.query')).toBe(2);
  });
});

it('the memory backend cannot list a queue: oldestWaiting is undefined (the page says not known)', async () => {
  const backend = openMemory();
  await backend.queues.enqueue({ queue: 'mail', itemId: 'a', flow: 'send', input: null });
  const view = viewOver(backend);
  expect(await view.oldestWaiting('mail')).toBeUndefined();
  await view.close();
});
