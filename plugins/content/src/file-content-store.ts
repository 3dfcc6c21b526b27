import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
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
import { contentStoreClosed, contentStoreFailure, invalidArgument } from './errors.js';

/** Options of {@link FileContentStore}. */
export interface FileContentStoreOptions {
  /** The directory that holds the content (created if missing). */
  directory: string;
  /** Largest content accepted, in bytes. Default `ContentLimits.contentBytesMax` (64 MiB). */
  contentBytesMax?: number;
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'ENOENT';
}

/**
 * A content store in a directory: one file per piece of content, at `<directory>/<2 hex>/<64
 * hex>`. A put writes a temporary file, syncs it to disk and renames it into place, so a reader
 * never sees half a file and a crash leaves at most a temporary file behind.
 *
 * @example
 * const content = new FileContentStore({ directory: './content' });
 */
export class FileContentStore implements ContentStore {
  readonly backend = 'file';
  private readonly directory: string;
  private readonly contentBytesMax: number;
  private closed = false;

  constructor(options: FileContentStoreOptions) {
    if (typeof options?.directory !== 'string' || options.directory === '')
      throw invalidArgument('directory', 'FileContentStore needs a directory', options?.directory);
    this.directory = options.directory;
    this.contentBytesMax = contentBytesMaxOption(options.contentBytesMax);
  }

  async put(bytes: Uint8Array): Promise<ContentRef> {
    this.open();
    checkContentBytes(bytes, this.contentBytesMax);
    const key = contentKeyOf(bytes);
    const ref: ContentRef = { $content: key, bytes: bytes.byteLength };
    const path = this.pathOf(key);
    try {
      if (await this.exists(path)) return ref;
      const folder = join(this.directory, key.slice(7, 9));
      await mkdir(folder, { recursive: true });
      const temporary = join(folder, `.${key.slice(7)}.${randomBytes(6).toString('hex')}.tmp`);
      const file = await open(temporary, 'wx');
      try {
        await file.writeFile(bytes);
        await file.datasync();
      } finally {
        await file.close();
      }
      await rename(temporary, path);
      return ref;
    } catch (error) {
      throw contentStoreFailure(this.backend, 'put', error);
    }
  }

  async get(key: ContentKey): Promise<Uint8Array | undefined> {
    this.open();
    const path = this.pathOf(checkContentKey(key));
    try {
      return new Uint8Array(await readFile(path));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw contentStoreFailure(this.backend, 'get', error);
    }
  }

  /** Reads the files in parallel: a directory has no round trip to save. */
  async getMany(keys: readonly ContentKey[]): Promise<ReadonlyMap<ContentKey, Uint8Array>> {
    this.open();
    const distinct = [...new Set(checkContentKeys(keys))];
    const found = new Map<ContentKey, Uint8Array>();
    const read = await Promise.all(distinct.map((key) => this.get(key)));
    distinct.forEach((key, index) => {
      const bytes = read[index];
      if (bytes !== undefined) found.set(key, bytes);
    });
    return found;
  }

  async has(key: ContentKey): Promise<boolean> {
    this.open();
    return this.exists(this.pathOf(checkContentKey(key)));
  }

  async delete(key: ContentKey): Promise<void> {
    this.open();
    const path = this.pathOf(checkContentKey(key));
    try {
      await rm(path, { force: true });
    } catch (error) {
      throw contentStoreFailure(this.backend, 'delete', error);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private pathOf(key: ContentKey): string {
    return join(this.directory, key.slice(7, 9), key.slice(7));
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await stat(path);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw contentStoreFailure(this.backend, 'stat', error);
    }
  }

  private open(): void {
    if (this.closed) throw contentStoreClosed(this.backend);
  }
}
