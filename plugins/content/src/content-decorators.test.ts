// What the decorators claim, on each backend (the log and its content store on one database):
// large fields leave the log for a reference, identical content is stored once, reads resolve a
// batch with one getMany (or coalesced gets), missing content reads as a marker, verify keeps
// working, corrupt content is never served, and bad input writes nothing.
import { createHash } from 'node:crypto';
import {
  canAppendBatch,
  type EventEnvelope,
  type EventStore,
  ForwardingEventStore,
  InMemoryEventStore,
  isTransactional,
  type JsonValue,
  type LoomError,
  type StoredEvent,
} from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { freshId, until } from '@loom/event-runtime/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cachingContentStore } from './caching-content-store.js';
import { type ContentKey, isContentRef, isMissingContent } from './content-ref.js';
import { contentResolvingEventStore } from './content-resolving-event-store.js';
import type { ContentStore } from './content-store.js';
import { externalizingEventStore } from './externalizing-event-store.js';
import { InMemoryContentStore } from './in-memory-content-store.js';
import { PostgresContentStore } from './postgres-content-store.js';
import { SqliteContentStore } from './sqlite-content-store.js';
import { SlowContentStore } from './testing/slow-content-store.js';
import { pgTestUrl, useThrowaway } from './throwaway.test-support.js';

const spare = useThrowaway();

interface Setup {
  log: EventStore;
  content: ContentStore;
  close(): Promise<void>;
}

const backends: Array<[string, () => Promise<Setup>]> = [
  [
    'memory',
    async () => {
      const log = new InMemoryEventStore();
      const content = new InMemoryContentStore();
      return { log, content, close: async () => {} };
    },
  ],
  [
    'sqlite',
    async () => {
      const path = spare.freshPath('.db');
      const log = SqliteEventStore.open({ path, migrate: true });
      const content = SqliteContentStore.open({ path });
      return { log, content, close: async () => void (await content.close()) };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = spare.freshSchema();
      const log = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
      await log.migrate();
      const content = await PostgresContentStore.open({ pool: log.connectionPool, schema });
      return { log, content, close: async () => void (await content.close()) };
    },
  ],
];

const big = (label: string, size = 40_000) => `${label}:${'x'.repeat(size)}`;
const keyOfText = (text: string) =>
  `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}` as ContentKey;

async function refusal(promise: Promise<unknown>): Promise<LoomError> {
  try {
    await promise;
  } catch (error) {
    return error as LoomError;
  }
  throw new Error('expected the call to fail');
}

for (const [name, setUp] of backends) {
  describe(`content decorators on ${name}`, () => {
    let setup: Setup;
    let counted: SlowContentStore;
    let store: EventStore;

    beforeEach(async () => {
      setup = await setUp();
      counted = new SlowContentStore(setup.content);
      store = contentResolvingEventStore(
        externalizingEventStore(setup.log, counted, { thresholdBytes: 1024 }),
        counted,
      );
    });
    afterEach(async () => {
      await store.close();
      await setup.close();
    });

    it('a large field is a reference in the log, chained as stored, and reads back exactly', async () => {
      const id = freshId('large');
      const payload = { name: 'fetch', result: { body: big('page'), status: 200 }, n: -0 };
      const [stored] = await store.append([
        { executionId: id, sequence: 0, type: 'step.completed', payload, at: 7 },
      ]);
      expect(stored?.payload).toEqual(payload);
      const [raw] = await setup.log.read(id);
      const fieldText = JSON.stringify(payload.result);
      const ref = { $content: keyOfText(fieldText), bytes: Buffer.byteLength(fieldText) };
      expect(raw?.payload).toEqual({ name: 'fetch', result: ref, n: -0 });
      expect(isContentRef((raw!.payload as Record<string, JsonValue>).result)).toBe(true);
      // The chain covers the stored form: the reference, whose key is the content's hash.
      const storedText = `{"name":"fetch","result":${JSON.stringify(ref)},"n":-0}`;
      const hash = createHash('sha256')
        .update(`\n${id}\n0\nstep.completed\n7\n${storedText}`)
        .digest('hex');
      expect(raw?.hash).toBe(hash);
      expect(stored?.hash).toBe(hash);
      const [read] = await store.read(id);
      expect(read?.payload).toEqual(payload);
      expect(Object.is((read!.payload as { n: number }).n, -0)).toBe(true);
      expect(await store.verify(id)).toMatchObject({ ok: true, events: 1 });
    });

    it('the same bytes from two executions are stored once', async () => {
      const result = big('same');
      for (const id of [freshId('a'), freshId('b')])
        await store.append([{ executionId: id, sequence: 0, type: 't', payload: { result } }]);
      expect(counted.counts.puts).toBe(2);
      const key = keyOfText(JSON.stringify(result));
      expect(await setup.content.has(key)).toBe(true);
      // On Postgres readAll holds back rows until every transaction open before them on the
      // cluster has ended (another test's can be): wait for both, with a real deadline.
      let all: StoredEvent[] = [];
      await until(async () => {
        all = await setup.log.readAll();
        return all.length >= 2;
      }, 'readAll to see both appends');
      const keys = all.map((event) => (event.payload as { result: { $content: string } }).result);
      expect(new Set(keys.map((ref) => ref.$content))).toEqual(new Set([key]));
    });

    it('a read batch resolves its distinct references with one getMany', async () => {
      const id = freshId('batch');
      const envelopes: EventEnvelope[] = Array.from({ length: 60 }, (_, sequence) => ({
        executionId: id,
        sequence,
        type: 't',
        // 50 distinct contents, ten of them twice
        payload: { result: big(`item-${sequence % 50}`, 2000), sequence },
      }));
      await store.append(envelopes);
      counted.reset();
      const read = await store.read(id);
      expect(counted.counts).toMatchObject({ getManys: 1, gets: 0 });
      expect(read.map((event) => event.payload)).toEqual(envelopes.map((e) => e.payload));
      counted.reset();
      const seen: JsonValue[] = [];
      const subscription = store.subscribe({ executionId: id }, (events) => {
        for (const event of events) seen.push(event.payload);
      });
      const deadline = Date.now() + 5_000;
      while (seen.length < 60 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      await subscription.close();
      expect(seen).toEqual(envelopes.map((e) => e.payload));
      expect(counted.counts.gets).toBe(0);
    });

    it('deleted content reads as the missing marker, and verify still passes', async () => {
      const id = freshId('erase');
      const secret = big('secret');
      await store.append([
        { executionId: id, sequence: 0, type: 't', payload: { secret, keep: 'small' } },
      ]);
      const key = keyOfText(JSON.stringify(secret));
      await setup.content.delete(key);
      const [read] = await store.read(id);
      const payload = read?.payload as Record<string, JsonValue>;
      expect(payload.keep).toBe('small');
      expect(isMissingContent(payload.secret)).toBe(true);
      expect(payload.secret).toEqual({
        $content: key,
        bytes: Buffer.byteLength(JSON.stringify(secret)),
        missing: true,
      });
      expect(await store.verify(id)).toMatchObject({ ok: true, events: 1 });
    });

    it('a value that looks like a reference is stored as content, so it reads back as itself', async () => {
      const id = freshId('lookalike');
      const lookalike = { $content: keyOfText('not stored'), bytes: 10 };
      await store.append([{ executionId: id, sequence: 0, type: 't', payload: { lookalike } }]);
      expect((await store.read(id))[0]?.payload).toEqual({ lookalike });
      const raw = (await setup.log.read(id))[0]?.payload as Record<string, { $content: string }>;
      expect(raw.lookalike?.$content).toBe(keyOfText(JSON.stringify(lookalike)));
    });

    it('bad input is refused with the kernel error before any content is written', async () => {
      const id = freshId('bad');
      const error = await refusal(
        store.append([{ executionId: id, sequence: -1, type: 't', payload: { big: big('b') } }]),
      );
      expect(error.code).toBe('INVALID_ENVELOPE');
      const cyclic: Record<string, unknown> = { big: big('c') };
      cyclic.self = cyclic;
      const notJson = await refusal(
        store.append([{ executionId: id, sequence: 0, type: 't', payload: cyclic as JsonValue }]),
      );
      expect(notJson.code).toBe('PAYLOAD_NOT_JSON');
      expect(counted.counts.puts).toBe(0);
      expect(await setup.log.read(id)).toEqual([]);
    });

    it('a field larger than the log allows fits once it moves out', async () => {
      const id = freshId('huge');
      const payload = { observation: 'é'.repeat(700_000) }; // 1.4 MB of UTF-8
      const plain = await refusal(
        setup.log.append([{ executionId: `${id}-plain`, sequence: 0, type: 't', payload }]),
      );
      expect(plain.code).toBe('LIMIT_EXCEEDED');
      await store.append([{ executionId: id, sequence: 0, type: 't', payload }]);
      expect((await store.read(id))[0]?.payload).toEqual(payload);
    });

    it('execution.started keeps flow and version in the log for the index, whatever their size', async () => {
      const id = freshId('start');
      const flow = `flow-${'f'.repeat(1100)}`;
      await store.append([
        {
          executionId: id,
          sequence: 0,
          type: 'execution.started',
          payload: { flow, version: '1', input: big('input') },
        },
      ]);
      const raw = (await setup.log.read(id))[0]?.payload as Record<string, JsonValue>;
      expect(raw.flow).toBe(flow);
      expect(isContentRef(raw.input)).toBe(true);
      const found = await store.findExecutions({ flow });
      expect(found.map((summary) => summary.executionId)).toEqual([id]);
    });

    if (name !== 'memory') {
      it('transact: the step event goes through the decorators inside the transaction', async () => {
        if (!isTransactional(store)) throw new Error(`no transact over ${name}`);
        const id = freshId('tx');
        const payload = { name: 'save', result: { body: big('tx') } };
        // Postgres holds its transaction across an await: the work is asynchronous and the
        // field moves to the content store before the commit. better-sqlite3 cannot: the work is
        // synchronous, nothing can be put, and the field stays in the log (ADR 0037).
        const work = name === 'postgres' ? async () => 'done' : () => 'done';
        const { result, stored } = await store.transact(work, (done) => [
          { executionId: id, sequence: 0, type: 'step.completed', payload: { ...payload, done } },
        ]);
        expect(result).toBe('done');
        expect(stored[0]?.payload).toEqual({ ...payload, done: 'done' });
        const [raw] = await setup.log.read(id);
        const rawResult = (raw?.payload as Record<string, JsonValue> | undefined)?.result;
        if (name === 'postgres') {
          expect(isContentRef(rawResult)).toBe(true);
          expect(counted.counts.puts).toBe(1);
        } else {
          expect(rawResult).toEqual(payload.result);
          expect(counted.counts.puts).toBe(0);
        }
        expect((await store.read(id))[0]?.payload).toEqual({ ...payload, done: 'done' });
        expect(await store.verify(id)).toMatchObject({ ok: true });
      });

      it('appendBatch: each request moves its fields; a bad request fails alone, nothing of it put', async () => {
        if (!canAppendBatch(store)) throw new Error(`no appendBatch over ${name}`);
        const [a, b, c] = [freshId('batch'), freshId('batch'), freshId('batch')];
        const large = { result: { body: big('batch') } };
        const outcomes = await store.appendBatch([
          { envelopes: [{ executionId: a, sequence: 0, type: 'step.completed', payload: large }] },
          // An empty type: refused with the kernel's error before its content is put.
          {
            envelopes: [
              { executionId: b, sequence: 0, type: '', payload: { result: { body: big('bad') } } },
            ],
          },
          { envelopes: [{ executionId: c, sequence: 0, type: 'small', payload: { n: 1 } }] },
        ]);
        expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false, true]);
        expect((outcomes[1] as { ok: false; error: LoomError }).error.code).toBe(
          'INVALID_ENVELOPE',
        );
        expect((outcomes[0] as { ok: true; stored: StoredEvent[] }).stored[0]?.payload).toEqual(
          large,
        );
        const [raw] = await setup.log.read(a);
        expect(isContentRef((raw?.payload as Record<string, JsonValue> | undefined)?.result)).toBe(
          true,
        );
        expect(await setup.log.read(b)).toEqual([]);
        expect((await setup.log.read(c))[0]?.payload).toEqual({ n: 1 });
        expect(counted.counts.puts).toBe(1);
      });
    }

    it('corrupt content is CONTENT_CORRUPT, never served', async () => {
      const id = freshId('corrupt');
      await store.append([{ executionId: id, sequence: 0, type: 't', payload: { a: big('a') } }]);
      const key = keyOfText(JSON.stringify(big('a')));
      const lying: ContentStore = {
        backend: 'lying',
        put: (bytes) => setup.content.put(bytes),
        get: async () => new TextEncoder().encode('"other bytes"'),
        getMany: async (keys) => new Map(keys.map((k) => [k, new TextEncoder().encode('"x"')])),
        has: async () => true,
        delete: async () => {},
        close: async () => {},
      };
      const reader = contentResolvingEventStore(setup.log, lying);
      const error = await refusal(reader.read(id));
      expect(error.code).toBe('CONTENT_CORRUPT');
      expect(error.fields).toMatchObject({ ref: key });
    });
  });
}

describe('stores without getMany', () => {
  it('a batch costs one get per distinct key, and concurrent reads share them', async () => {
    const content = new SlowContentStore(new InMemoryContentStore(), {
      withGetMany: false,
      roundTripMs: 2,
    });
    const store = contentResolvingEventStore(
      externalizingEventStore(new InMemoryEventStore(), content, { thresholdBytes: 64 }),
      content,
    );
    const id = freshId('fallback');
    await store.append(
      Array.from({ length: 20 }, (_, sequence) => ({
        executionId: id,
        sequence,
        type: 't',
        payload: { result: big(`r${sequence % 5}`, 100) },
      })),
    );
    content.reset();
    const [first, second] = await Promise.all([store.read(id), store.read(id)]);
    expect(content.counts.gets).toBe(5);
    expect(second).toEqual(first);
    expect((first[7]!.payload as { result: string }).result).toBe(big('r2', 100));
  });
});

describe('with a cache in front of the content store', () => {
  it('an append that moves content, and reads after it, cost the backend one put and no read', async () => {
    const backend = new SlowContentStore(new InMemoryContentStore());
    const content = cachingContentStore(backend, { bytesMax: 1024 * 1024 });
    const store = contentResolvingEventStore(
      externalizingEventStore(new InMemoryEventStore(), content, { thresholdBytes: 1024 }),
      content,
    );
    const id = freshId('cached');
    const payload = { result: big('cached') };
    const [stored] = await store.append([{ executionId: id, sequence: 0, type: 't', payload }]);
    expect(stored?.payload).toEqual(payload);
    expect((await store.read(id))[0]?.payload).toEqual(payload);
    expect(backend.counts).toMatchObject({ puts: 1, gets: 0, getManys: 0 });
  });
});

describe('wiring', () => {
  it('keeps the inner lease store, transact and appendBatch as the inner store has them; a bad threshold is INVALID_ARGUMENT', async () => {
    const path = spare.freshPath('.db');
    const log = SqliteEventStore.open({ path, migrate: true });
    const content = new InMemoryContentStore();
    const store = contentResolvingEventStore(externalizingEventStore(log, content), content);
    expect(store.defaultLeaseStore?.()).toBe(log.defaultLeaseStore());
    expect(isTransactional(store)).toBe(true);
    expect(canAppendBatch(store)).toBe(true);
    const overMemory = contentResolvingEventStore(
      externalizingEventStore(new InMemoryEventStore(), content),
      content,
    );
    expect(isTransactional(overMemory)).toBe(false);
    // The in-memory store appends batches (a runtime's group commit, ADR 0040); a store that does
    // not offers none through the decorators either.
    expect(canAppendBatch(overMemory)).toBe(true);
    const overPlain = contentResolvingEventStore(
      externalizingEventStore(new ForwardingEventStore(new InMemoryEventStore()), content),
      content,
    );
    expect(canAppendBatch(overPlain)).toBe(false);
    expect(contentResolvingEventStore(new InMemoryEventStore(), content).defaultLeaseStore).toBe(
      undefined,
    );
    for (const thresholdBytes of [0, -1, 1.5, Number.NaN]) {
      const error = await refusal(
        (async () => externalizingEventStore(log, content, { thresholdBytes }))(),
      );
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.fields.option).toBe('thresholdBytes');
    }
    await store.close();
  });
});
