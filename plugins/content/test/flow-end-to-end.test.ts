// End to end through the real runtime: a flow whose step returns a large value, run on a log
// wrapped with the content decorators (SQLite file and Postgres, the content in the same
// database). The log holds a reference; two executions producing the same bytes store them
// once; a new runtime on new handles (a restart) replays the run from the log and gets the
// value back; after the content is deleted, a read shows the missing marker and verify passes.
import type { EventStore, JsonValue } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ContentStore,
  contentResolvingEventStore,
  externalizingEventStore,
  isContentRef,
  isMissingContent,
} from '../src/index.js';
import { PostgresContentStore } from '../src/postgres.js';
import { SqliteContentStore } from '../src/sqlite.js';
import { pgTestUrl, useThrowaway } from '../src/throwaway.test-support.js';

const spare = useThrowaway();

let fetches = 0;
const pageOf = (url: string) => `<html>${url}${'<p>lorem ipsum</p>'.repeat(12_000)}</html>`; // ~216 KB

const crawl = defineFlow({ name: 'crawl' }, async (ctx, url: string) => {
  const page = await ctx.step('fetch', () => {
    fetches += 1;
    return { url, body: pageOf(url) };
  });
  await ctx.waitForSignal('go', { timeout: '1d' });
  const size = await ctx.step('measure', () => page.body.length);
  return { size };
});

/** One process's handles on the database: the log, the content, and the wired store. */
interface Handles {
  log: EventStore;
  content: ContentStore;
  store: EventStore;
}

interface Backend {
  open(): Promise<Handles>;
  countContent(): Promise<number>;
}

function wired(log: EventStore, content: ContentStore): Handles {
  const store = contentResolvingEventStore(
    externalizingEventStore(log, content, { thresholdBytes: 16 * 1024 }),
    content,
  );
  return { log, content, store };
}

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'sqlite',
    async () => {
      const path = spare.freshPath('.db');
      SqliteEventStore.open({ path, migrate: true }).close();
      const side = new Database(path);
      afterAll(() => side.close());
      return {
        open: async () => wired(SqliteEventStore.open({ path }), SqliteContentStore.open({ path })),
        countContent: async () =>
          (side.prepare('SELECT count(*) AS n FROM loom_content').get() as { n: number }).n,
      };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = spare.freshSchema();
      return {
        open: async () => {
          const log = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
          await log.migrate();
          const content = await PostgresContentStore.open({ pool: log.connectionPool, schema });
          return wired(log, content);
        },
        countContent: async () =>
          (await spare.admin.query(`SELECT count(*)::int AS n FROM "${schema}".content`)).rows[0]
            .n as number,
      };
    },
  ],
];

async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const [name, make] of backends) {
  describe(`a flow on content-wrapped ${name}`, () => {
    it('logs a reference, stores the bytes once, replays after a restart, and erases cleanly', async () => {
      const backend = await make();
      fetches = 0;
      const ids = [`crawl-${name}-1`, `crawl-${name}-2`];

      // First process: both executions fetch the same page, then wait for a signal.
      const first = await backend.open();
      const before = createRuntime({ store: first.store, flows: [crawl], timerPollMs: 50 });
      for (const id of ids) await before.start(crawl, 'https://example.com', { executionId: id });
      await eventually(
        'both executions to suspend',
        () => first.store.findExecutions({ status: 'suspended', flow: 'crawl' }),
        (found) => found.length === 2,
      );
      await before.shutdown();
      await first.store.close();
      await first.content.close();
      expect(fetches).toBe(2);

      // Second process: new handles, the runtime knows nothing; the signal resumes by replay.
      const second = await backend.open();
      const after = createRuntime({ store: second.store, flows: [crawl], timerPollMs: 50 });
      try {
        for (const id of ids) await after.signal(id, 'go', null);
        for (const id of ids) {
          const result = await after.attach(id).result();
          expect(result).toEqual({ size: pageOf('https://example.com').length });
        }
        expect(fetches).toBe(2); // the fetch was replayed from the log, not run again

        // The log holds the reference; both executions share one stored copy.
        const fetched = (await second.log.read(ids[0] as string)).find(
          (event) =>
            event.type === 'step.completed' &&
            (event.payload as { name?: string }).name === 'fetch',
        );
        const raw = fetched?.payload as Record<string, JsonValue>;
        expect(isContentRef(raw.result)).toBe(true);
        const ref = raw.result as { $content: `sha256:${string}`; bytes: number };
        expect(ref.bytes).toBeGreaterThan(200_000);
        expect(await backend.countContent()).toBe(1);

        // Erase the content: reads show the marker, and the chain still verifies.
        await second.content.delete(ref.$content);
        const events = await second.store.read(ids[0] as string);
        const resolved = events.find((event) => event.sequence === fetched?.sequence);
        expect(isMissingContent((resolved!.payload as Record<string, JsonValue>).result)).toBe(
          true,
        );
        for (const id of ids) expect(await second.store.verify(id)).toMatchObject({ ok: true });
      } finally {
        await after.shutdown();
        await second.store.close();
        await second.content.close();
      }
    });
  });
}
