import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContentKey } from '../content-ref.js';
import type { ContentStore } from '../content-store.js';
import { ContentErrorCode } from '../errors.js';

/** What a backend hands {@link contentStoreConformance} for one test. */
export interface ContentStoreHarness {
  /** A fresh, empty store (with `contentBytesMax` when the test passes one). */
  store: ContentStore;
  /** A second, independent handle on the same storage (another connection, file handle). */
  openPeer(): Promise<ContentStore>;
  /** Pieces of content actually stored, counted behind the store's back. */
  countStored(): Promise<number>;
  /** Release everything (the store, peers, throwaway schemas or files). */
  close(): Promise<void>;
}

const text = (value: string) => new TextEncoder().encode(value);
const keyOf = (bytes: Uint8Array) =>
  `sha256:${createHash('sha256').update(bytes).digest('hex')}` as ContentKey;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: string }).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

const badKeys: unknown[] = [
  'sha256:',
  `sha256:${'a'.repeat(63)}`,
  `sha256:${'A'.repeat(64)}`,
  `md5:${'a'.repeat(32)}`,
  `${'a'.repeat(64)}`,
  ` sha256:${'a'.repeat(64)}`,
  42,
  null,
  { $content: `sha256:${'a'.repeat(64)}`, bytes: 1 },
];

/**
 * The one behaviour suite every `ContentStore` passes, unchanged: memory, the directory store,
 * SQLite, Postgres, the cache, and yours. `open` gives a fresh harness per test.
 *
 * @example
 * contentStoreConformance('memory', async (o) => {
 *   const store = new InMemoryContentStore(o);
 *   return { store, openPeer: async () => store, countStored: async () => store.size, close: () => store.close() };
 * });
 */
export function contentStoreConformance(
  name: string,
  open: (options: { contentBytesMax?: number }) => Promise<ContentStoreHarness>,
): void {
  describe(`ContentStore conformance: ${name}`, () => {
    let harness: ContentStoreHarness;
    let store: ContentStore;

    beforeEach(async () => {
      harness = await open({});
      store = harness.store;
    });
    afterEach(async () => {
      await harness.close();
    });

    it('put returns the sha-256 reference and its size, and get returns the bytes', async () => {
      const bytes = text('hello, content');
      const ref = await store.put(bytes);
      expect(ref).toEqual({ $content: keyOf(bytes), bytes: bytes.byteLength });
      expect(await store.get(ref.$content)).toEqual(bytes);
      expect(await store.has(ref.$content)).toBe(true);
    });

    it('the same bytes are stored once, also when put concurrently', async () => {
      const bytes = randomBytes(4096);
      const refs = await Promise.all([1, 2, 3, 4, 5].map(() => store.put(bytes)));
      expect(new Set(refs.map((ref) => ref.$content)).size).toBe(1);
      await store.put(new Uint8Array(bytes));
      expect(await harness.countStored()).toBe(1);
      await store.put(text('other'));
      expect(await harness.countStored()).toBe(2);
    });

    it('keeps its own copy: changing the input or the output changes nothing stored', async () => {
      const bytes = text('immutable');
      const ref = await store.put(bytes);
      bytes[0] = 0;
      const read = (await store.get(ref.$content)) as Uint8Array;
      expect(new TextDecoder().decode(read)).toBe('immutable');
      read[0] = 0;
      expect(new TextDecoder().decode(await store.get(ref.$content))).toBe('immutable');
      const many = await store.getMany?.([ref.$content]);
      if (many !== undefined) {
        (many.get(ref.$content) as Uint8Array)[0] = 0;
        expect(new TextDecoder().decode(await store.get(ref.$content))).toBe('immutable');
      }
    });

    it('empty and large content (1 MiB of random bytes) round-trip exactly', async () => {
      const empty = await store.put(new Uint8Array(0));
      expect(empty.bytes).toBe(0);
      expect(await store.get(empty.$content)).toEqual(new Uint8Array(0));
      const large = randomBytes(1024 * 1024);
      const ref = await store.put(large);
      expect(Buffer.from((await store.get(ref.$content)) as Uint8Array).equals(large)).toBe(true);
    });

    it('unknown content is absent, not an error', async () => {
      const key = keyOf(text('never stored'));
      expect(await store.get(key)).toBeUndefined();
      expect(await store.has(key)).toBe(false);
    });

    it('getMany returns what is there in one call, missing keys absent, repeats harmless', async () => {
      if (store.getMany === undefined) return; // optional: readers fall back to get
      const a = await store.put(text('a'));
      const b = await store.put(text('b'));
      const missing = keyOf(text('missing'));
      const found = await store.getMany([a.$content, missing, b.$content, a.$content]);
      expect([...found.keys()].sort()).toEqual([a.$content, b.$content].sort());
      expect(new TextDecoder().decode(found.get(b.$content))).toBe('b');
      expect((await store.getMany([])).size).toBe(0);
    });

    it('delete removes content for every reader; deleting again is a no-op; put brings it back', async () => {
      const bytes = text('erase me');
      const ref = await store.put(bytes);
      const peer = await harness.openPeer();
      expect(await peer.get(ref.$content)).toEqual(bytes);
      await store.delete(ref.$content);
      expect(await store.get(ref.$content)).toBeUndefined();
      expect(await store.has(ref.$content)).toBe(false);
      expect(await peer.get(ref.$content)).toBeUndefined();
      expect((await store.getMany?.([ref.$content]))?.size ?? 0).toBe(0);
      expect(await harness.countStored()).toBe(0);
      await store.delete(ref.$content);
      await store.put(bytes);
      expect(await store.get(ref.$content)).toEqual(bytes);
    });

    it('a malformed key is CONTENT_REF_INVALID in every call', async () => {
      for (const key of badKeys) {
        const k = key as ContentKey;
        expect(await codeOf(store.get(k)), String(key)).toBe(ContentErrorCode.CONTENT_REF_INVALID);
        expect(await codeOf(store.has(k))).toBe(ContentErrorCode.CONTENT_REF_INVALID);
        expect(await codeOf(store.delete(k))).toBe(ContentErrorCode.CONTENT_REF_INVALID);
        if (store.getMany !== undefined)
          expect(await codeOf(store.getMany([k]))).toBe(ContentErrorCode.CONTENT_REF_INVALID);
      }
      if (store.getMany !== undefined) {
        const notArray = 'sha256:x' as unknown as ContentKey[];
        expect(await codeOf(store.getMany(notArray))).toBe(ContentErrorCode.INVALID_ARGUMENT);
      }
    });

    it('bytes that are not a Uint8Array are INVALID_ARGUMENT, and nothing is stored', async () => {
      for (const bad of ['text', [1, 2], null, undefined, new ArrayBuffer(2)]) {
        expect(await codeOf(store.put(bad as unknown as Uint8Array))).toBe(
          ContentErrorCode.INVALID_ARGUMENT,
        );
      }
      expect(await harness.countStored()).toBe(0);
    });

    it('content over contentBytesMax is CONTENT_TOO_LARGE, and nothing is stored', async () => {
      const small = await open({ contentBytesMax: 16 });
      try {
        await small.store.put(new Uint8Array(16));
        const error = await small.store.put(new Uint8Array(17)).catch((caught) => caught);
        expect(error.code).toBe(ContentErrorCode.CONTENT_TOO_LARGE);
        expect(error.fields).toMatchObject({ limit: 'contentBytesMax', actual: 17, max: 16 });
        expect(await small.countStored()).toBe(1);
      } finally {
        await small.close();
      }
    });

    it('after close every call is STORE_CLOSED, and closing again is harmless', async () => {
      const ref = await store.put(text('x'));
      await store.close();
      expect(await codeOf(store.put(text('y')))).toBe(ContentErrorCode.STORE_CLOSED);
      expect(await codeOf(store.get(ref.$content))).toBe(ContentErrorCode.STORE_CLOSED);
      expect(await codeOf(store.has(ref.$content))).toBe(ContentErrorCode.STORE_CLOSED);
      expect(await codeOf(store.delete(ref.$content))).toBe(ContentErrorCode.STORE_CLOSED);
      await store.close();
    });
  });
}
