import Database from 'better-sqlite3';
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

/** Options of {@link SqliteContentStore.open}. */
export interface SqliteContentStoreOptions {
  /** The database file (it may be the event store's own file: the table is `loom_content`). */
  path: string;
  /** Largest content accepted, in bytes. Default `ContentLimits.contentBytesMax` (64 MiB). */
  contentBytesMax?: number;
}

// The one table. `key` is the content's sha-256 key; WITHOUT ROWID keeps the row in the key's
// b-tree, so a lookup by key is one b-tree descent.
const schema = `CREATE TABLE IF NOT EXISTS loom_content (
  key TEXT PRIMARY KEY NOT NULL,
  bytes BLOB NOT NULL
) WITHOUT ROWID`;

/**
 * A content store in a SQLite file (WAL, `synchronous=FULL`: a put is on disk when it returns,
 * before the log appends the reference). `getMany` is one statement over a JSON array of keys.
 *
 * @example
 * const content = SqliteContentStore.open({ path: './loom.db' });
 */
export class SqliteContentStore implements ContentStore {
  readonly backend = 'sqlite';
  private readonly db: Database.Database;
  private readonly contentBytesMax: number;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly selectMany: Database.Statement;
  private readonly exists: Database.Statement;
  private readonly remove: Database.Statement;
  private closed = false;

  private constructor(db: Database.Database, contentBytesMax: number) {
    this.db = db;
    this.contentBytesMax = contentBytesMax;
    this.insert = db.prepare(
      'INSERT INTO loom_content (key, bytes) VALUES (?, ?) ON CONFLICT DO NOTHING',
    );
    this.select = db.prepare('SELECT bytes FROM loom_content WHERE key = ?');
    this.selectMany = db.prepare(
      'SELECT key, bytes FROM loom_content WHERE key IN (SELECT value FROM json_each(?))',
    );
    this.exists = db.prepare('SELECT 1 FROM loom_content WHERE key = ?');
    this.remove = db.prepare('DELETE FROM loom_content WHERE key = ?');
  }

  /** Opens (and creates, if missing) the file and its `loom_content` table. */
  static open(options: SqliteContentStoreOptions): SqliteContentStore {
    if (typeof options?.path !== 'string' || options.path === '')
      throw invalidArgument('path', 'SqliteContentStore.open needs a path', options?.path);
    const contentBytesMax = contentBytesMaxOption(options.contentBytesMax);
    let db: Database.Database;
    try {
      db = new Database(options.path);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('busy_timeout = 5000');
      db.exec(schema);
    } catch (error) {
      throw contentStoreFailure('sqlite', 'open', error);
    }
    return new SqliteContentStore(db, contentBytesMax);
  }

  async put(bytes: Uint8Array): Promise<ContentRef> {
    this.open();
    checkContentBytes(bytes, this.contentBytesMax);
    const key = contentKeyOf(bytes);
    this.run('put', () => this.insert.run(key, Buffer.from(bytes)));
    return { $content: key, bytes: bytes.byteLength };
  }

  async get(key: ContentKey): Promise<Uint8Array | undefined> {
    this.open();
    checkContentKey(key);
    const row = this.run('get', () => this.select.get(key)) as { bytes: Buffer } | undefined;
    return row === undefined ? undefined : new Uint8Array(row.bytes);
  }

  async getMany(keys: readonly ContentKey[]): Promise<ReadonlyMap<ContentKey, Uint8Array>> {
    this.open();
    checkContentKeys(keys);
    const found = new Map<ContentKey, Uint8Array>();
    if (keys.length === 0) return found;
    const rows = this.run('getMany', () => this.selectMany.all(JSON.stringify(keys))) as Array<{
      key: ContentKey;
      bytes: Buffer;
    }>;
    for (const row of rows) found.set(row.key, new Uint8Array(row.bytes));
    return found;
  }

  async has(key: ContentKey): Promise<boolean> {
    this.open();
    checkContentKey(key);
    return this.run('has', () => this.exists.get(key)) !== undefined;
  }

  async delete(key: ContentKey): Promise<void> {
    this.open();
    checkContentKey(key);
    this.run('delete', () => this.remove.run(key));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  private run<T>(operation: string, statement: () => T): T {
    try {
      return statement();
    } catch (error) {
      throw contentStoreFailure(this.backend, operation, error);
    }
  }

  private open(): void {
    if (this.closed) throw contentStoreClosed(this.backend);
  }
}
