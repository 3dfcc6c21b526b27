import type Database from 'better-sqlite3';
import type { Clock } from '../../clock.js';
import { systemClock } from '../../clock.js';
import { checkLeaseBatch, checkLeaseOwner, leaseExpiry } from '../../internal/lease-input.js';
import { checkNodeBatch } from '../../internal/node-claims.js';
import { checkExecutionId } from '../../internal/prepare-append.js';
import type { Lease, LeaseStore, NodeClaim } from '../../lease-store.js';
import { mapSqliteError } from './sqlite-errors.js';
import { acquireSql, getSql, releaseSql, renewSql } from './sqlite-lease-statements.js';
import { SqliteNodeLocks } from './sqlite-node-locks.js';
import { SqliteTableAccess } from './sqlite-table-access.js';

/** Options of {@link SqliteLeaseStore}. */
export interface SqliteLeaseStoreOptions {
  /** Judges expiry and computes new expiries. Default: the wall clock. */
  clock?: Clock;
  /** Refuse writes with `STORE_READ_ONLY`. Always true on a read-only handle. Default false. */
  readOnly?: boolean;
}

function prepareStatements(db: Database.Database) {
  return {
    acquire: db
      .prepare<[{ ids: string; owner: string; expiresAtMs: number; nowMs: number }], string>(
        acquireSql,
      )
      .pluck(),
    renew: db
      .prepare<[{ ids: string; owner: string; expiresAtMs: number }], string>(renewSql)
      .pluck(),
    release: db.prepare<[{ ids: string; owner: string }]>(releaseSql),
    get: db.prepare<[string], { owner: string; expires_at_ms: number }>(getSql),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/**
 * Leases in the SQLite file of a `SqliteEventStore`, on its connection (pass
 * `eventStore.database`), so leases and the log share one file and one writer. Every batch is
 * one statement and one transaction, through cached prepared statements. A lease is expired once
 * `expires_at_ms <= clock.now()`; until someone else takes it, its owner still holds it and may
 * renew it. The tables come from migration 2 ('leases-and-snapshots'); an older schema is refused.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` (bad id, batch over `leaseBatchMax`),
 * `INVALID_ARGUMENT` (bad owner, ttl or id array), `SCHEMA_NOT_MIGRATED`, `SCHEMA_TOO_NEW`,
 * `STORE_READ_ONLY`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_FAILURE`.
 *
 * @example
 * const events = SqliteEventStore.open({ path: 'loom.db', migrate: true });
 * const leases = new SqliteLeaseStore(events.database);
 * const granted = await leases.acquireMany('node-a', ['order-1', 'order-2'], 30_000);
 * const lost = await leases.renewMany('node-a', [...granted], 30_000); // stop driving these
 */
export class SqliteLeaseStore implements LeaseStore {
  readonly backend = 'sqlite';
  private readonly tables: SqliteTableAccess<Statements>;

  /** True when opened read-only (or on a read-only handle): writes fail with `STORE_READ_ONLY`. */
  get readOnly(): boolean {
    return this.tables.readOnly;
  }
  private readonly clock: Clock;
  private readonly nodes: SqliteNodeLocks;

  /**
   * Wraps an open better-sqlite3 handle; touches nothing until the first call, so it may be
   * created before `migrate()`. The store never closes the handle: its owner does.
   */
  constructor(database: Database.Database, options: SqliteLeaseStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.nodes = new SqliteNodeLocks(database);
    this.tables = new SqliteTableAccess(
      database,
      'lease',
      'leases-and-snapshots',
      prepareStatements,
      options.readOnly,
    );
  }

  /**
   * Grants each id that has no lease, whose lease expired, or that `owner` already holds (the
   * expiry becomes now + ttl), in one statement. Returns the ids granted.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async acquireMany(
    owner: string,
    executionIds: readonly string[],
    ttlMs: number,
  ): Promise<Set<string>> {
    this.tables.assertWritable('acquire leases');
    const nowMs = this.clock.now();
    checkLeaseOwner(owner);
    const expiresAtMs = leaseExpiry(ttlMs, nowMs);
    const ids = checkLeaseBatch(executionIds, 'acquireMany');
    if (ids.length === 0) return new Set();
    const { acquire } = this.tables.ready();
    try {
      return new Set(acquire.all({ ids: JSON.stringify(ids), owner, expiresAtMs, nowMs }));
    } catch (error) {
      throw mapSqliteError(error, 'acquireMany');
    }
  }

  /**
   * Extends each lease `owner` holds, expired or not (nobody took it, so it is still the
   * owner's), in one statement. Returns the ids not renewed: held by someone else, or released.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async renewMany(
    owner: string,
    executionIds: readonly string[],
    ttlMs: number,
  ): Promise<string[]> {
    this.tables.assertWritable('renew leases');
    checkLeaseOwner(owner);
    const expiresAtMs = leaseExpiry(ttlMs, this.clock.now());
    const ids = checkLeaseBatch(executionIds, 'renewMany');
    if (ids.length === 0) return [];
    const { renew } = this.tables.ready();
    let renewed: Set<string>;
    try {
      renewed = new Set(renew.all({ ids: JSON.stringify(ids), owner, expiresAtMs }));
    } catch (error) {
      throw mapSqliteError(error, 'renewMany');
    }
    return ids.filter((executionId) => !renewed.has(executionId));
  }

  /**
   * Deletes the leases `owner` holds among `executionIds`, in one statement; others' stay.
   * Throws `INVALID_ARGUMENT`, `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async releaseMany(owner: string, executionIds: readonly string[]): Promise<void> {
    this.tables.assertWritable('release leases');
    checkLeaseOwner(owner);
    const ids = checkLeaseBatch(executionIds, 'releaseMany');
    if (ids.length === 0) return;
    const { release } = this.tables.ready();
    try {
      release.run({ ids: JSON.stringify(ids), owner });
    } catch (error) {
      throw mapSqliteError(error, 'releaseMany');
    }
  }

  /**
   * The lease on `executionId`, expired or not; undefined when there is none.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `SCHEMA_NOT_MIGRATED`, `STORE_CLOSED`,
   * `STORE_FAILURE`.
   */
  async get(executionId: string): Promise<Lease | undefined> {
    this.tables.assertOpen();
    checkExecutionId(executionId);
    const { get } = this.tables.ready();
    let row: { owner: string; expires_at_ms: number } | undefined;
    try {
      row = get.get(executionId);
    } catch (error) {
      throw mapSqliteError(error, 'get lease');
    }
    return row === undefined
      ? undefined
      : { executionId, owner: row.owner, expiresAtMs: row.expires_at_ms };
  }

  /**
   * Claims `nodeId` with an exclusive lock on a file in `<database>-nodes/` (an in-memory
   * database keeps claims in memory), held until `release()` or the process dies. Resolves
   * undefined when a live process holds it. Throws `INVALID_ARGUMENT`, `STORE_CLOSED`,
   * `STORE_FAILURE` (the directory cannot be written).
   */
  async claimNode(nodeId: string): Promise<NodeClaim | undefined> {
    this.tables.assertOpen();
    return this.nodes.claim(checkLeaseOwner(nodeId, 'nodeId'));
  }

  /**
   * The ids among `nodeIds` whose lock a live process holds (a lock file is tried, never
   * waited on; the files of dead nodes are removed). Throws `INVALID_ARGUMENT`,
   * `LIMIT_EXCEEDED`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async liveNodes(nodeIds: readonly string[]): Promise<Set<string>> {
    this.tables.assertOpen();
    return this.nodes.live(checkNodeBatch(nodeIds));
  }

  /** How many node locks live processes hold. Throws `STORE_CLOSED`, `STORE_FAILURE`. */
  async countLiveNodes(): Promise<number> {
    this.tables.assertOpen();
    return this.nodes.count();
  }

  /** Further calls fail with `STORE_CLOSED`. Leaves the database handle open. Idempotent. */
  async close(): Promise<void> {
    this.tables.close();
  }
}
