import type pg from 'pg';
import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { checkLeaseBatch, checkLeaseOwner, leaseExpiry } from '../../internal/lease-input.js';
import { checkNodeBatch } from '../../internal/node-claims.js';
import { checkExecutionId } from '../../internal/prepare-append.js';
import { storeReadOnly } from '../../internal/store-errors.js';
import type { Lease, LeaseStore, NodeClaim } from '../../lease-store.js';
import { type LeaseStatements, leaseStatements } from './lease-statements.js';
import { leasesAndSnapshotsMigration } from './migrations/0002-leases-and-snapshots.js';
import {
  type NodeLockStatements,
  nodeLockKeys,
  nodeLockStatements,
} from './node-lock-statements.js';
import { toLoomError } from './pg-errors.js';
import { clientClassOf, type PgConnectionOptions, resolvePool } from './pg-pool.js';
import { PgStoreHandle } from './pg-store-handle.js';
import { checkSchemaName, quoteIdent } from './schema-name.js';

/** How to open a {@link PostgresLeaseStore}. */
export interface PostgresLeaseStoreOptions extends PgConnectionOptions {
  /** The Postgres schema holding Loom's tables (validated identifier). Default `loom`. */
  schema?: string;
  /** Judges expiry and computes new expiries. Default: the wall clock. */
  clock?: Clock;
  /** Refuse acquire, renew and release with `STORE_READ_ONLY`. Default false. */
  readOnly?: boolean;
}

/**
 * Leases on executions in Postgres (`<schema>.leases`, from migration 2
 * '0002-leases-and-snapshots'). Every batch is one named prepared statement, so one round trip
 * and one transaction, with the ids as one `text[]` parameter; empty batches send nothing.
 * Expiry is judged by the injected clock (passed as a parameter, never the server's `now()`): a
 * lease is expired once `expires_at_ms <= clock.now()`, and until someone else takes it its
 * owner still holds it and may renew it. Rows are locked in id order, so racing batches never
 * deadlock.
 *
 * To share one pool with the event and snapshot stores, pass `pool` (your own `pg.Pool`, or
 * `eventStore.connectionPool`); the store then never ends it, so close it before the pool's
 * owner ends the pool.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` (bad id, batch over `leaseBatchMax`),
 * `INVALID_ARGUMENT` (bad owner, ttl, id array or options), `SCHEMA_NOT_MIGRATED`,
 * `SCHEMA_TOO_NEW`, `STORE_READ_ONLY`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`,
 * `STORE_FAILURE`.
 *
 * @example
 * const events = await PostgresEventStore.open({ connectionString: process.env.DATABASE_URL });
 * const leases = await PostgresLeaseStore.open({ pool: events.connectionPool, schema: events.schema });
 * const granted = await leases.acquireMany('node-a', ['order-1', 'order-2'], 30_000);
 * const lost = await leases.renewMany('node-a', [...granted], 30_000); // stop driving these
 * await leases.close(); // before events.close(), which ends the pool
 */
export class PostgresLeaseStore implements LeaseStore {
  readonly backend = 'postgres';
  /** The Postgres schema holding the lease table. */
  readonly schema: string;
  /** True when opened with `readOnly`: acquire, renew and release are `STORE_READ_ONLY`. */
  readonly readOnly: boolean;
  private readonly handle: PgStoreHandle;
  private readonly clock: Clock;
  private readonly sql: LeaseStatements;
  private readonly nodeSql: NodeLockStatements;
  /** Where a node claim opens its own connection (the pool's settings, outside the pool). */
  private readonly pool: pg.Pool;

  /**
   * Opens a lease store on a schema and checks its version (one round trip). A schema that is
   * absent or older than version 2 is fine here: calls then fail with `SCHEMA_NOT_MIGRATED` until
   * someone migrates it (the store notices without being reopened). Throws `INVALID_ARGUMENT`
   * (bad schema name, both `pool` and `connectionString`), `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`.
   *
   * @example
   * const leases = await PostgresLeaseStore.open({ connectionString: 'postgres://localhost/app' });
   */
  static async open(options: PostgresLeaseStoreOptions = {}): Promise<PostgresLeaseStore> {
    const schema = checkSchemaName(options.schema ?? 'loom');
    const resolved = resolvePool(options);
    const handle = new PgStoreHandle(resolved, {
      schema,
      requiredVersion: leasesAndSnapshotsMigration.version,
      store: 'lease store',
    });
    try {
      await handle.inspectSchema();
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new PostgresLeaseStore(handle, resolved.pool, options);
  }

  /**
   * A lease store on a pool someone else owns (never ended by this store), without the version
   * check round trip of `open`: the first call checks the schema instead. For
   * `PostgresEventStore.defaultLeaseStore`. Throws `INVALID_ARGUMENT` (bad schema name).
   */
  static onPool(
    pool: pg.Pool,
    schema: string,
    options: { clock?: Clock; readOnly?: boolean } = {},
  ): PostgresLeaseStore {
    const handle = new PgStoreHandle(
      { pool, owned: false, finder: undefined },
      {
        schema: checkSchemaName(schema),
        requiredVersion: leasesAndSnapshotsMigration.version,
        store: 'lease store',
      },
    );
    return new PostgresLeaseStore(handle, pool, options);
  }

  private constructor(handle: PgStoreHandle, pool: pg.Pool, options: PostgresLeaseStoreOptions) {
    this.handle = handle;
    this.pool = pool;
    this.nodeSql = nodeLockStatements(handle.schema);
    this.schema = handle.schema;
    this.clock = options.clock ?? systemClock;
    this.readOnly = options.readOnly ?? false;
    this.sql = leaseStatements(quoteIdent(handle.schema), handle.schema);
  }

  /**
   * Grants each id that has no lease, whose lease expired, or that `owner` already holds (the
   * expiry becomes now + ttl), in one statement. Returns the ids granted.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async acquireMany(
    owner: string,
    executionIds: readonly string[],
    ttlMs: number,
  ): Promise<Set<string>> {
    this.assertWritable('acquire leases');
    const nowMs = this.clock.now();
    checkLeaseOwner(owner);
    const expiresAtMs = leaseExpiry(ttlMs, nowMs);
    const ids = checkLeaseBatch(executionIds, 'acquireMany');
    if (ids.length === 0) return new Set();
    const rows = await this.handle.run<{ execution_id: string }>(
      this.sql.acquire,
      [ids, owner, expiresAtMs, nowMs],
      'acquireMany',
    );
    return new Set(rows.map((row) => row.execution_id));
  }

  /**
   * Extends each lease `owner` holds, expired or not (nobody took it, so it is still the
   * owner's), in one statement. Returns the ids not renewed, in batch order: held by someone
   * else, or released.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async renewMany(
    owner: string,
    executionIds: readonly string[],
    ttlMs: number,
  ): Promise<string[]> {
    this.assertWritable('renew leases');
    checkLeaseOwner(owner);
    const expiresAtMs = leaseExpiry(ttlMs, this.clock.now());
    const ids = checkLeaseBatch(executionIds, 'renewMany');
    if (ids.length === 0) return [];
    const rows = await this.handle.run<{ execution_id: string }>(
      this.sql.renew,
      [ids, owner, expiresAtMs],
      'renewMany',
    );
    const renewed = new Set(rows.map((row) => row.execution_id));
    return ids.filter((executionId) => !renewed.has(executionId));
  }

  /**
   * Deletes the leases `owner` holds among `executionIds`, in one statement; others' stay.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async releaseMany(owner: string, executionIds: readonly string[]): Promise<void> {
    this.assertWritable('release leases');
    checkLeaseOwner(owner);
    const ids = checkLeaseBatch(executionIds, 'releaseMany');
    if (ids.length === 0) return;
    await this.handle.run(this.sql.release, [ids, owner], 'releaseMany');
  }

  /**
   * The lease on `executionId`, expired or not; undefined when there is none.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `SCHEMA_NOT_MIGRATED`, `STORE_UNAVAILABLE`,
   * `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async get(executionId: string): Promise<Lease | undefined> {
    this.handle.assertOpen(this.backend);
    const id = checkExecutionId(executionId);
    const rows = await this.handle.run<{ owner: string; expires_at_ms: string }>(
      this.sql.get,
      [id],
      'get lease',
    );
    const row = rows[0];
    // bigint comes back as text; every expiry written was a safe integer (leaseExpiry).
    return row === undefined
      ? undefined
      : { executionId: id, owner: row.owner, expiresAtMs: Number(row.expires_at_ms) };
  }

  /**
   * Claims `nodeId` with a session advisory lock on a connection of its own (opened with the
   * pool's settings, outside the pool, so it never takes a pooled connection), held until
   * `release()` or until the session ends: a killed process reads as dead once Postgres sees its
   * socket close. A session that ends under a live process (terminated, idle timeout, failover)
   * resolves the claim's `lost`. Resolves undefined when a live session holds it. Throws `INVALID_ARGUMENT`,
   * `STORE_CLOSED`, `STORE_UNAVAILABLE`, `STORE_FAILURE`.
   */
  async claimNode(nodeId: string): Promise<NodeClaim | undefined> {
    this.handle.assertOpen(this.backend);
    checkLeaseOwner(nodeId, 'nodeId');
    const [schemaKey, nodeKey] = nodeLockKeys(this.schema, nodeId);
    const client = new (clientClassOf(this.pool))(this.pool.options);
    // A claim connection that breaks ends the claim (the node then reads as dead to others): it
    // is reported through `lost`, never as an unhandled 'error' event in the user's process.
    let released = false;
    let markLost: () => void = () => undefined;
    const lost = new Promise<void>((resolve) => {
      markLost = () => {
        if (!released) resolve();
      };
    });
    client.on('error', () => markLost());
    client.on('end', () => markLost());
    let claimed: boolean;
    try {
      await client.connect();
      const result = await client.query<{ claimed: boolean }>({
        ...this.nodeSql.claim,
        values: [schemaKey, nodeKey],
      });
      claimed = result.rows[0]?.claimed === true;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw toLoomError(error, {
        schema: this.schema,
        operation: 'claim a node id',
        latestVersion: leasesAndSnapshotsMigration.version,
      });
    }
    if (!claimed) {
      await client.end().catch(() => undefined);
      return undefined;
    }
    // The claim idles for the life of the process: like the runtime's timers, it must not keep
    // the process alive on its own (pg exposes no option for it, hence its socket).
    (
      client as unknown as { connection?: { stream?: { unref?: () => void } } }
    ).connection?.stream?.unref?.();
    return {
      nodeId,
      lost,
      release: async () => {
        if (released) return;
        released = true;
        // Ending the session drops its advisory locks.
        await client.end().catch(() => undefined);
      },
    };
  }

  /**
   * The ids among `nodeIds` whose claim a live session holds, from `pg_locks` (one round trip,
   * no lock taken). Throws `INVALID_ARGUMENT`, `LIMIT_EXCEEDED`, `STORE_CLOSED`,
   * `STORE_UNAVAILABLE`, `STORE_FAILURE`.
   */
  async liveNodes(nodeIds: readonly string[]): Promise<Set<string>> {
    this.handle.assertOpen(this.backend);
    const ids = checkNodeBatch(nodeIds);
    if (ids.length === 0) return new Set();
    const keyOf = new Map<string, string>();
    let schemaKey = 0;
    for (const id of ids) {
      const [schemaPart, nodeKey] = nodeLockKeys(this.schema, id);
      schemaKey = schemaPart >>> 0;
      keyOf.set(id, String(nodeKey >>> 0));
    }
    const rows = await this.handle.run<{ key: string }>(
      this.nodeSql.live,
      [schemaKey, [...keyOf.values()]],
      'liveNodes',
    );
    const held = new Set(rows.map((row) => String(row.key)));
    return new Set(ids.filter((id) => held.has(keyOf.get(id) as string)));
  }

  /**
   * How many node claims of this schema live sessions hold, from `pg_locks`. Throws
   * `STORE_CLOSED`, `STORE_UNAVAILABLE`, `STORE_FAILURE`.
   */
  async countLiveNodes(): Promise<number> {
    this.handle.assertOpen(this.backend);
    const [schemaKey] = nodeLockKeys(this.schema, '-');
    const rows = await this.handle.run<{ live: number }>(
      this.nodeSql.count,
      [schemaKey >>> 0],
      'countLiveNodes',
    );
    return rows[0]?.live ?? 0;
  }

  /**
   * Further calls fail with `STORE_CLOSED`. Ends the pool only if the store created it (from
   * `connectionString`); a pool passed in is left to its owner. Idempotent.
   */
  async close(): Promise<void> {
    await this.handle.close();
  }

  private assertWritable(operation: string): void {
    this.handle.assertOpen(this.backend);
    if (this.readOnly) throw storeReadOnly('postgres lease', operation);
  }
}
