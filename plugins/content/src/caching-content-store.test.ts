import { describe, expect, it } from 'vitest';
import { cachingContentStore } from './caching-content-store.js';
import type { ContentKey, ContentRef } from './content-ref.js';
import type { ContentStore } from './content-store.js';
import { InMemoryContentStore } from './in-memory-content-store.js';
import { SlowContentStore } from './testing/slow-content-store.js';

const bytesOf = (text: string) => new TextEncoder().encode(text);

/** A backend whose next `get` waits until the test releases it. */
class GatedStore implements ContentStore {
  readonly backend = 'gated';
  readonly inner = new InMemoryContentStore();
  private gate: Promise<void> | undefined;
  release: () => void = () => {};
  deleteSawCached: boolean | undefined;
  cache: { isCached(key: ContentKey): boolean } | undefined;

  holdNextGet(): void {
    this.gate = new Promise((resolve) => {
      this.release = resolve;
    });
  }

  put(bytes: Uint8Array): Promise<ContentRef> {
    return this.inner.put(bytes);
  }
  async get(key: ContentKey): Promise<Uint8Array | undefined> {
    const read = await this.inner.get(key);
    const gate = this.gate;
    this.gate = undefined;
    if (gate !== undefined) await gate;
    return read;
  }
  has(key: ContentKey): Promise<boolean> {
    return this.inner.has(key);
  }
  async delete(key: ContentKey): Promise<void> {
    this.deleteSawCached = this.cache?.isCached(key);
    await this.inner.delete(key);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

describe('cachingContentStore', () => {
  it('serves repeated reads from memory: one backend round trip per key, ever', async () => {
    const backend = new SlowContentStore(new InMemoryContentStore());
    const cache = cachingContentStore(backend, { bytesMax: 1024 });
    const ref = await backend.put(bytesOf('cold'));
    backend.reset();
    for (let i = 0; i < 5; i++) expect(await cache.get(ref.$content)).toEqual(bytesOf('cold'));
    expect(backend.counts.gets).toBe(1);
    const other = await backend.put(bytesOf('other'));
    backend.reset();
    const found = await cache.getMany([ref.$content, other.$content]);
    expect(found.size).toBe(2);
    expect(backend.counts).toMatchObject({ gets: 0, getManys: 1 });
    await cache.getMany([ref.$content, other.$content]);
    expect(backend.counts.getManys).toBe(1);
  });

  it('a put is cached, so the append that writes it and the read after cost no get', async () => {
    const backend = new SlowContentStore(new InMemoryContentStore());
    const cache = cachingContentStore(backend, { bytesMax: 1024 });
    const ref = await cache.put(bytesOf('written'));
    expect(await cache.get(ref.$content)).toEqual(bytesOf('written'));
    expect(backend.counts.gets).toBe(0);
  });

  it('stays within bytesMax, evicting the least recently used first; bigger content is never cached', async () => {
    const cache = cachingContentStore(new InMemoryContentStore(), { bytesMax: 100 });
    const a = await cache.put(new Uint8Array(40).fill(1));
    const b = await cache.put(new Uint8Array(40).fill(2));
    await cache.get(a.$content); // a is now the most recently used
    const c = await cache.put(new Uint8Array(40).fill(3));
    expect(cache.cachedBytes).toBe(80);
    expect([
      cache.isCached(a.$content),
      cache.isCached(b.$content),
      cache.isCached(c.$content),
    ]).toEqual([true, false, true]);
    const huge = await cache.put(new Uint8Array(101));
    expect(cache.isCached(huge.$content)).toBe(false);
    expect(cache.cachedBytes).toBe(80);
    expect(await cache.get(huge.$content)).toEqual(new Uint8Array(101));
  });

  it('delete evicts the cache before it deletes from the backend', async () => {
    const backend = new GatedStore();
    const cache = cachingContentStore(backend, { bytesMax: 1024 });
    backend.cache = cache;
    const ref = await cache.put(bytesOf('erase me'));
    expect(cache.isCached(ref.$content)).toBe(true);
    await cache.delete(ref.$content);
    expect(backend.deleteSawCached).toBe(false);
    expect(await cache.get(ref.$content)).toBeUndefined();
  });

  it('a get in flight when a delete begins does not bring the content back into the cache', async () => {
    const backend = new GatedStore();
    const cache = cachingContentStore(backend, { bytesMax: 1024 });
    const ref = await backend.put(bytesOf('secret'));
    backend.holdNextGet();
    const reading = cache.get(ref.$content); // read the bytes, then waits at the gate
    await new Promise((resolve) => setImmediate(resolve));
    await cache.delete(ref.$content);
    backend.release();
    expect(await reading).toEqual(bytesOf('secret')); // it began before the delete
    expect(cache.isCached(ref.$content)).toBe(false);
    expect(await cache.get(ref.$content)).toBeUndefined();
    expect(await cache.has(ref.$content)).toBe(false);
  });
});
