import type { ContentKey, ContentRef } from './content-ref.js';
import { checkContentKey, checkContentKeys } from './content-ref.js';
import type { ContentStore } from './content-store.js';
import { invalidArgument } from './errors.js';
import { fetchMany } from './internal/fetch-many.js';

/** Options of {@link cachingContentStore}. */
export interface CachingContentStoreOptions {
  /** Most bytes the cache holds; the least recently used content leaves first. Content larger than this is never cached. */
  bytesMax: number;
}

/** A content store with a cache in front, and what the cache holds. */
export interface CachingContentStore extends ContentStore {
  /** One round trip for the keys not cached (one `getMany`, or parallel `get`s below it). */
  getMany: NonNullable<ContentStore['getMany']>;
  /** Bytes of content in the cache now (≤ `bytesMax`). */
  readonly cachedBytes: number;
  /** Whether `key` is in the cache now (for tests and metrics; no backend call). */
  isCached(key: ContentKey): boolean;
}

/**
 * Wraps a content store with an in-memory cache without expiry: content never changes under its
 * key, so a cached copy is never stale. Bounded by `bytesMax` (least recently used first out).
 * `delete` evicts the cache entry *before* it deletes from the backend, and a `get` or `put`
 * that was in flight when a delete began never inserts what it read: erased content cannot come
 * back through the cache.
 *
 * @example
 * const content = cachingContentStore(new InMemoryContentStore(), { bytesMax: 64 * 1024 * 1024 });
 */
export function cachingContentStore(
  inner: ContentStore,
  options: CachingContentStoreOptions,
): CachingContentStore {
  const bytesMax = options?.bytesMax;
  if (typeof bytesMax !== 'number' || !Number.isSafeInteger(bytesMax) || bytesMax < 0)
    throw invalidArgument('bytesMax', 'bytesMax must be a non-negative integer', bytesMax);
  return new ContentCache(inner, bytesMax);
}

class ContentCache implements CachingContentStore {
  // A Map iterates in insertion order: re-inserting on a hit makes the first key the LRU one.
  private readonly entries = new Map<ContentKey, Uint8Array>();
  private bytes = 0;
  // Bumped by every delete: a read that began before it must not fill the cache.
  private deletions = 0;
  readonly getMany: NonNullable<ContentStore['getMany']>;

  constructor(
    private readonly inner: ContentStore,
    private readonly bytesMax: number,
  ) {
    this.getMany = async (keys) => this.readMany(checkContentKeys(keys));
  }

  get backend(): string {
    return `cached ${this.inner.backend}`;
  }

  get cachedBytes(): number {
    return this.bytes;
  }

  isCached(key: ContentKey): boolean {
    return this.entries.has(key);
  }

  async put(bytes: Uint8Array): Promise<ContentRef> {
    const epoch = this.deletions;
    const ref = await this.inner.put(bytes);
    if (epoch === this.deletions) this.remember(ref.$content, new Uint8Array(bytes));
    return ref;
  }

  async get(key: ContentKey): Promise<Uint8Array | undefined> {
    checkContentKey(key);
    const hit = this.recall(key);
    if (hit !== undefined) return new Uint8Array(hit);
    const epoch = this.deletions;
    const bytes = await this.inner.get(key);
    if (bytes !== undefined && epoch === this.deletions) this.remember(key, new Uint8Array(bytes));
    return bytes;
  }

  async has(key: ContentKey): Promise<boolean> {
    checkContentKey(key);
    return this.entries.has(key) || this.inner.has(key);
  }

  async delete(key: ContentKey): Promise<void> {
    checkContentKey(key);
    this.deletions += 1;
    this.forget(key);
    await this.inner.delete(key);
  }

  close(): Promise<void> {
    this.entries.clear();
    this.bytes = 0;
    return this.inner.close();
  }

  private async readMany(
    keys: readonly ContentKey[],
  ): Promise<ReadonlyMap<ContentKey, Uint8Array>> {
    const found = new Map<ContentKey, Uint8Array>();
    const misses: ContentKey[] = [];
    for (const key of new Set(keys)) {
      const hit = this.recall(key);
      if (hit === undefined) misses.push(key);
      else found.set(key, new Uint8Array(hit));
    }
    if (misses.length === 0) return found;
    const epoch = this.deletions;
    const fetched = await fetchMany(this.inner, misses);
    for (const [key, bytes] of fetched) {
      found.set(key, bytes);
      if (epoch === this.deletions) this.remember(key, new Uint8Array(bytes));
    }
    return found;
  }

  private recall(key: ContentKey): Uint8Array | undefined {
    const bytes = this.entries.get(key);
    if (bytes === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, bytes);
    return bytes;
  }

  private remember(key: ContentKey, bytes: Uint8Array): void {
    if (bytes.byteLength > this.bytesMax || this.entries.has(key)) return;
    this.entries.set(key, bytes);
    this.bytes += bytes.byteLength;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.bytesMax) break;
      this.entries.delete(oldest);
      this.bytes -= old.byteLength;
    }
  }

  private forget(key: ContentKey): void {
    const bytes = this.entries.get(key);
    if (bytes === undefined) return;
    this.entries.delete(key);
    this.bytes -= bytes.byteLength;
  }
}
