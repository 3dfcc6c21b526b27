import { createHash } from 'node:crypto';
import { createPostgresPool } from '@loom/event-runtime/postgres';
import type pg from 'pg';
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

/** Options of {@link PostgresContentStore.open}. */
export interface PostgresContentStoreOptions {
  /** A connection string (the store opens and closes its own pool), or … */
  connectionString?: string;
  /** … a pool you own (the store never ends it). */
  pool?: pg.Pool;
  /** The schema of the `content` table (may be the event store's). Default `loom`. */
  schema?: string;
  /** Largest content accepted, in bytes. Default `ContentLimits.contentBytesMax` (64 MiB). */
  contentBytesMax?: number;
}

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * A content store in a Postgres table `<schema>.content` (key text primary key, bytes bytea).
 * Every call is one prepared statement; `getMany` is one `= ANY($1)` query.
 *
 * @example
 * const content = await PostgresContentStore.open({ connectionString, schema: 'loom' });
 */
export class PostgresContentStore implements ContentStore {
  readonly backend = 'postgres';
  private readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly table: string;
  private readonly contentBytesMax: number;
  private closed = false;

  private constructor(pool: pg.Pool, ownsPool: boolean, schema: string, contentBytesMax: number) {
    this.pool = pool;
    this.ownsPool = ownsPool;
    this.table = `"${schema}".content`;
    this.contentBytesMax = contentBytesMax;
  }

  /** Connects and creates the schema and table if missing (`CREATE … IF NOT EXISTS`). */
  static async open(options: PostgresContentStoreOptions): Promise<PostgresContentStore> {
    const schema = options?.schema ?? 'loom';
    if (!identifier.test(schema))
      throw invalidArgument('schema', 'schema must be a plain SQL identifier', schema);
    const contentBytesMax = contentBytesMaxOption(options.contentBytesMax);
    if ((options.pool === undefined) === (options.connectionString === undefined))
      throw invalidArgument('pool', 'pass exactly one of connectionString and pool');
    const ownsPool = options.pool === undefined;
    // The kernel's pool: it listens for 'error' (a server restart must not crash the process)
    // and takes a host list (ADR 0055).
    const pool =
      options.pool ?? createPostgresPool({ connectionString: options.connectionString as string });
    const store = new PostgresContentStore(pool, ownsPool, schema, contentBytesMax);
    try {
      await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await pool.query(
        `CREATE TABLE IF NOT EXISTS ${store.table} (key text PRIMARY KEY, bytes bytea NOT NULL)`,
      );
    } catch (error) {
      if (ownsPool) await pool.end();
      throw contentStoreFailure('postgres', 'open', error);
    }
    return store;
  }

  async put(bytes: Uint8Array): Promise<ContentRef> {
    this.open();
    checkContentBytes(bytes, this.contentBytesMax);
    const key = contentKeyOf(bytes);
    await this.query(
      'put',
      `INSERT INTO ${this.table} (key, bytes) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
      [key, Buffer.from(bytes)],
    );
    return { $content: key, bytes: bytes.byteLength };
  }

  async get(key: ContentKey): Promise<Uint8Array | undefined> {
    this.open();
    checkContentKey(key);
    const rows = await this.query('get', `SELECT bytes FROM ${this.table} WHERE key = $1`, [key]);
    const row = rows[0] as { bytes: Buffer } | undefined;
    return row === undefined ? undefined : new Uint8Array(row.bytes);
  }

  async getMany(keys: readonly ContentKey[]): Promise<ReadonlyMap<ContentKey, Uint8Array>> {
    this.open();
    checkContentKeys(keys);
    const found = new Map<ContentKey, Uint8Array>();
    if (keys.length === 0) return found;
    const rows = await this.query(
      'getMany',
      `SELECT key, bytes FROM ${this.table} WHERE key = ANY($1::text[])`,
      [[...new Set(keys)]],
    );
    for (const row of rows as Array<{ key: ContentKey; bytes: Buffer }>)
      found.set(row.key, new Uint8Array(row.bytes));
    return found;
  }

  async has(key: ContentKey): Promise<boolean> {
    this.open();
    checkContentKey(key);
    const rows = await this.query('has', `SELECT 1 FROM ${this.table} WHERE key = $1`, [key]);
    return rows.length > 0;
  }

  async delete(key: ContentKey): Promise<void> {
    this.open();
    checkContentKey(key);
    await this.query('delete', `DELETE FROM ${this.table} WHERE key = $1`, [key]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.pool.end();
  }

  private async query(operation: string, text: string, values: unknown[]): Promise<unknown[]> {
    try {
      const result = await this.pool.query({
        // Named after the statement's text: each connection prepares it once, whatever the schema.
        name: `loom-content-${createHash('sha1').update(text).digest('hex').slice(0, 20)}`,
        text,
        values,
      });
      return result.rows;
    } catch (error) {
      throw contentStoreFailure(this.backend, operation, error);
    }
  }

  private open(): void {
    if (this.closed) throw contentStoreClosed(this.backend);
  }
}
