import type { ContentKey, ContentRef } from './content-ref.js';

/**
 * Immutable content addressed by its sha-256. One interface; memory, a directory, SQLite and
 * Postgres implement it, and every implementation passes `contentStoreConformance` from
 * `@loom/plugin-content/testing`.
 *
 * Error codes: `INVALID_ARGUMENT` (bytes that are not a Uint8Array), `CONTENT_REF_INVALID` (a
 * malformed key), `CONTENT_TOO_LARGE`, `STORE_CLOSED`, `STORE_FAILURE`.
 */
export interface ContentStore {
  /** Which backend this is, for logs and errors. */
  readonly backend: string;
  /**
   * Stores `bytes` durably and returns its reference. Idempotent: the same bytes give the same
   * reference and one stored copy. The store keeps a copy: changing `bytes` later changes nothing.
   */
  put(bytes: Uint8Array): Promise<ContentRef>;
  /** The content under `key` (a copy of it), or undefined when there is none. */
  get(key: ContentKey): Promise<Uint8Array | undefined>;
  /**
   * The content of every key in one round trip: a map from key to bytes, in which missing
   * content is absent. Optional: a reader falls back to parallel `get`s for a store without it.
   */
  getMany?(keys: readonly ContentKey[]): Promise<ReadonlyMap<ContentKey, Uint8Array>>;
  /** True when the store holds content under `key`. */
  has(key: ContentKey): Promise<boolean>;
  /** Removes the content under `key`; a key with no content is a no-op. */
  delete(key: ContentKey): Promise<void>;
  /** Releases files or connections; later calls fail with `STORE_CLOSED`. Closing twice is harmless. */
  close(): Promise<void>;
}
