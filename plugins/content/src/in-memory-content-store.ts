import {
  type ContentKey,
  type ContentRef,
  checkContentBytes,
  checkContentKey,
  checkContentKeys,
  contentBytesMaxOption,
  contentKeyOf,
} from './content-ref.js';
import type { ContentStore } from './content-store.js';
import { contentStoreClosed } from './errors.js';

/** Options of {@link InMemoryContentStore}. */
export interface InMemoryContentStoreOptions {
  /** Largest content accepted, in bytes. Default `ContentLimits.contentBytesMax` (64 MiB). */
  contentBytesMax?: number;
}

/**
 * A content store in this process's memory: for tests, and for logs that live in memory too.
 *
 * @example
 * const content = new InMemoryContentStore();
 * const ref = await content.put(new TextEncoder().encode('hello'));
 */
export class InMemoryContentStore implements ContentStore {
  readonly backend = 'memory';
  private readonly items = new Map<ContentKey, Uint8Array>();
  private readonly contentBytesMax: number;
  private closed = false;

  constructor(options: InMemoryContentStoreOptions = {}) {
    this.contentBytesMax = contentBytesMaxOption(options.contentBytesMax);
  }

  /** How many pieces of content are stored (for tests and metrics). */
  get size(): number {
    return this.items.size;
  }

  async put(bytes: Uint8Array): Promise<ContentRef> {
    this.open();
    checkContentBytes(bytes, this.contentBytesMax);
    const key = contentKeyOf(bytes);
    if (!this.items.has(key)) this.items.set(key, new Uint8Array(bytes));
    return { $content: key, bytes: bytes.byteLength };
  }

  async get(key: ContentKey): Promise<Uint8Array | undefined> {
    this.open();
    const bytes = this.items.get(checkContentKey(key));
    return bytes === undefined ? undefined : new Uint8Array(bytes);
  }

  async getMany(keys: readonly ContentKey[]): Promise<ReadonlyMap<ContentKey, Uint8Array>> {
    this.open();
    const found = new Map<ContentKey, Uint8Array>();
    for (const key of checkContentKeys(keys)) {
      const bytes = this.items.get(key);
      if (bytes !== undefined) found.set(key, new Uint8Array(bytes));
    }
    return found;
  }

  async has(key: ContentKey): Promise<boolean> {
    this.open();
    return this.items.has(checkContentKey(key));
  }

  async delete(key: ContentKey): Promise<void> {
    this.open();
    this.items.delete(checkContentKey(key));
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private open(): void {
    if (this.closed) throw contentStoreClosed(this.backend);
  }
}
