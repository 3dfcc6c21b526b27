import type { Pool } from 'pg';
import { ErrorCode, isLoomError, LoomError } from '../../errors.js';
import { latestSchemaVersion } from './migrations/migration-list.js';
import { type CheckedOutClient, checkOut } from './pg-client.js';
import { classifyPgError, schemaNotMigrated, schemaTooNew, toLoomError } from './pg-errors.js';
import type { ResolvedPool } from './pg-pool.js';
import type { PgStatement } from './pg-statement.js';
import { beginReadCommitted } from './read-committed.js';
import { readSchemaVersion } from './schema-version.js';

/** What a {@link PgStoreHandle} serves: a store that needs the tables of one migration. */
export interface PgStoreHandleOptions {
  /** The schema holding the tables (validated identifier). */
  schema: string;
  /** The schema version that created the store's tables; an older schema is refused. */
  requiredVersion: number;
  /** The store, for messages: `lease store`, `snapshot store`. */
  store: string;
}

/**
 * A pool, a schema and the schema-version gate of a Postgres kernel store (leases, snapshots).
 * Ends the pool on close only if the store created it; a shared pool belongs to its creator.
 */
export class PgStoreHandle {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly ownsPool: boolean;
  private readonly requiredVersion: number;
  private readonly store: string;
  private schemaReady = false;
  private closed = false;

  constructor(pool: ResolvedPool, options: PgStoreHandleOptions) {
    this.pool = pool.pool;
    this.ownsPool = pool.owned;
    this.schema = options.schema;
    this.requiredVersion = options.requiredVersion;
    this.store = options.store;
  }

  /** True when this handle runs on `pool` (the very object, not merely the same database). */
  usesPool(pool: Pool): boolean {
    return this.pool === pool;
  }

  /**
   * Reads the schema version (one round trip) and remembers whether the store's tables exist.
   * An absent or older schema is fine here: calls then fail with `SCHEMA_NOT_MIGRATED` until
   * someone migrates it. Throws `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`, `STORE_FAILURE`.
   */
  async inspectSchema(): Promise<number | null> {
    let version: number | null;
    try {
      version = await readSchemaVersion(this.pool, this.schema);
    } catch (error) {
      throw this.mapError(error, `${this.store}: schema version check`);
    }
    if (version !== null && version > latestSchemaVersion) {
      throw schemaTooNew(this.schema, version, latestSchemaVersion);
    }
    this.schemaReady = version !== null && version >= this.requiredVersion;
    return version;
  }

  /**
   * Sends one named prepared statement (one round trip; one more, once, while the schema is not
   * yet known to be migrated) and maps driver errors to `LoomError`s: `SCHEMA_NOT_MIGRATED`,
   * `SCHEMA_TOO_NEW`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `INVALID_ENVELOPE` (NUL in a string),
   * `STORE_FAILURE`.
   */
  async run<R>(statement: PgStatement, values: unknown[], operation: string): Promise<R[]> {
    if (!this.schemaReady) {
      const version = await this.inspectSchema();
      if (!this.schemaReady) throw schemaNotMigrated(this.schema, version, this.requiredVersion);
    }
    try {
      const result = await this.pool.query({ name: statement.name, text: statement.text, values });
      return result.rows as R[];
    } catch (error) {
      throw this.mapError(error, operation);
    }
  }

  /**
   * Runs `work` in one transaction on one pooled client (BEGIN … COMMIT; ROLLBACK on any error),
   * with the same schema gate and error mapping as {@link run}. `query` sends named prepared
   * statements on that client.
   */
  async transaction<T>(
    operation: string,
    work: (query: <R>(statement: PgStatement, values: unknown[]) => Promise<R[]>) => Promise<T>,
  ): Promise<T> {
    if (!this.schemaReady) {
      const version = await this.inspectSchema();
      if (!this.schemaReady) throw schemaNotMigrated(this.schema, version, this.requiredVersion);
    }
    let checkedOut: CheckedOutClient;
    try {
      checkedOut = await checkOut(this.pool);
    } catch (error) {
      throw this.mapError(error, operation);
    }
    const { client } = checkedOut;
    let broken = false;
    try {
      await client.query(beginReadCommitted);
      const result = await work(async <R>(statement: PgStatement, values: unknown[]) => {
        const answer = await client.query({ name: statement.name, text: statement.text, values });
        return answer.rows as R[];
      });
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      broken ||= checkedOut.lost !== undefined;
      if (isLoomError(error) && !broken) throw error;
      broken ||= classifyPgError(error) === 'connection_lost';
      throw this.mapError(checkedOut.lost ?? error, operation);
    } finally {
      checkedOut.release(broken);
    }
  }

  /**
   * Throws `STORE_CLOSED` once the store was closed, or once the owner of a shared pool ended it
   * (rather than letting pg fail with an unclassified error).
   */
  assertOpen(backend: string): void {
    if (this.closed) {
      throw new LoomError(ErrorCode.STORE_CLOSED, `the postgres ${this.store} is closed`, {
        backend,
      });
    }
    if (this.pool.ending) {
      throw new LoomError(
        ErrorCode.STORE_CLOSED,
        `the pg pool of the postgres ${this.store} was ended by its owner (the event store or ` +
          'your code): close the lease and snapshot stores before the pool they share',
        { backend },
      );
    }
  }

  /** Marks the handle closed and ends the pool if the store created it. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.pool.end();
  }

  private mapError(error: unknown, operation: string): LoomError {
    const mapped = toLoomError(error, {
      schema: this.schema,
      operation,
      latestVersion: this.requiredVersion,
    });
    // The schema was dropped under us: check again (and fail fast) on the next call.
    if (mapped.code === ErrorCode.SCHEMA_NOT_MIGRATED) this.schemaReady = false;
    return mapped;
  }
}
