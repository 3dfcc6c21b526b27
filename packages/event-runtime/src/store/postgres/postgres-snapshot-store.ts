import type { EventStore } from '../../event-store.js';
import { decodePayload } from '../../internal/json-codec.js';
import { checkExecutionId } from '../../internal/prepare-append.js';
import { prepareSnapshot } from '../../internal/prepare-snapshot.js';
import { readOptions } from '../../internal/read-options.js';
import { readTarget } from '../../internal/read-target.js';
import { storeReadOnly } from '../../internal/store-errors.js';
import { rowToEvent } from '../../internal/stored-row.js';
import { rememberTailHook } from '../../internal/test-hooks.js';
import type { Snapshot, SnapshotStore, SnapshotWithTail } from '../../snapshot-store.js';
import { leasesAndSnapshotsMigration } from './migrations/0002-leases-and-snapshots.js';
import { type PgConnectionOptions, resolvePool } from './pg-pool.js';
import { PgStoreHandle } from './pg-store-handle.js';
import { PostgresEventStore } from './postgres-event-store.js';
import { type PgEventRow, rowFromPg } from './read-statement.js';
import { checkSchemaName, quoteIdent } from './schema-name.js';
import { type SnapshotStatements, snapshotStatements } from './snapshot-statements.js';

/** How to open a {@link PostgresSnapshotStore}. */
export interface PostgresSnapshotStoreOptions extends PgConnectionOptions {
  /** The Postgres schema holding Loom's tables (validated identifier). Default `loom`. */
  schema?: string;
  /** Refuse saves with `STORE_READ_ONLY`. Default false. */
  readOnly?: boolean;
}

/** A row of the load-with-tail statement: the snapshot (kind 's') or an event (kind 'e'). */
interface SnapshotTailRow extends Omit<PgEventRow, 'type' | 'position' | 'hash'> {
  kind: 's' | 'e';
  type: string | null;
  position: string | null;
  hash: string | null;
}

interface SnapshotRow {
  sequence: string;
  state: string;
  at: string;
}

/**
 * The newest snapshot per execution in Postgres (`<schema>.snapshots`, from migration 2
 * '0002-leases-and-snapshots'). A save is one named prepared upsert that overwrites only with a
 * strictly greater sequence, so racing savers cannot move it backwards. State is stored as its
 * exact JSON text (`-0` and key order kept) and decoded afresh on every load.
 *
 * To share one pool with the event and lease stores, pass `pool` (your own `pg.Pool`, or
 * `eventStore.connectionPool`); the store then never ends it.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` (bad id, sequence or `at`; state over
 * `snapshotBytesMax` or `payloadDepthMax`), `PAYLOAD_NOT_JSON`, `INVALID_ARGUMENT` (options),
 * `SCHEMA_NOT_MIGRATED`, `SCHEMA_TOO_NEW`, `STORE_READ_ONLY`, `STORE_BUSY`, `STORE_UNAVAILABLE`,
 * `STORE_CLOSED`, `STORE_FAILURE`.
 *
 * @example
 * const events = await PostgresEventStore.open({ connectionString: process.env.DATABASE_URL });
 * const snapshots = await PostgresSnapshotStore.open({ pool: events.connectionPool, schema: events.schema });
 * await snapshots.save({ executionId: 'order-1', sequence: 40, state: { paid: true }, at: Date.now() });
 * const newest = await snapshots.load('order-1');
 */
export class PostgresSnapshotStore implements SnapshotStore {
  readonly backend = 'postgres';
  /** The Postgres schema holding the snapshot table. */
  readonly schema: string;
  /** True when opened with `readOnly`: saves are `STORE_READ_ONLY`. */
  readonly readOnly: boolean;
  private readonly handle: PgStoreHandle;
  private readonly sql: SnapshotStatements;

  /**
   * Opens a snapshot store on a schema and checks its version (one round trip). A schema that
   * is absent or older than version 2 is fine here: calls then fail with `SCHEMA_NOT_MIGRATED`
   * until someone migrates it. Throws `INVALID_ARGUMENT` (bad schema name, both `pool` and
   * `connectionString`), `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`.
   *
   * @example
   * const snapshots = await PostgresSnapshotStore.open({ connectionString: 'postgres://localhost/app' });
   */
  static async open(options: PostgresSnapshotStoreOptions = {}): Promise<PostgresSnapshotStore> {
    const schema = checkSchemaName(options.schema ?? 'loom');
    const handle = new PgStoreHandle(resolvePool(options), {
      schema,
      requiredVersion: leasesAndSnapshotsMigration.version,
      store: 'snapshot store',
    });
    try {
      await handle.inspectSchema();
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new PostgresSnapshotStore(handle, options);
  }

  private constructor(handle: PgStoreHandle, options: PostgresSnapshotStoreOptions) {
    this.handle = handle;
    this.schema = handle.schema;
    this.readOnly = options.readOnly ?? false;
    this.sql = snapshotStatements(quoteIdent(handle.schema), handle.schema);
  }

  /**
   * Stores `snapshot` unless one at the same or a later sequence is already stored (one round
   * trip). Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, `STORE_READ_ONLY`,
   * `SCHEMA_NOT_MIGRATED`, `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async save(snapshot: Snapshot): Promise<void> {
    this.handle.assertOpen(this.backend);
    if (this.readOnly) throw storeReadOnly('postgres snapshot', 'save a snapshot');
    const { executionId, sequence, stateText, at } = prepareSnapshot(snapshot);
    await this.handle.run(this.sql.save, [executionId, sequence, stateText, at], 'save snapshot');
  }

  /**
   * The newest snapshot of `executionId` (state decoded afresh on every call), or undefined.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `SCHEMA_NOT_MIGRATED`, `STORE_UNAVAILABLE`,
   * `STORE_CLOSED`, `STORE_FAILURE`.
   */
  async load(executionId: string): Promise<Snapshot | undefined> {
    this.handle.assertOpen(this.backend);
    const id = checkExecutionId(executionId);
    const rows = await this.handle.run<SnapshotRow>(this.sql.load, [id], 'load snapshot');
    const row = rows[0];
    if (row === undefined) return undefined;
    // bigints come back as text; every value written was a safe integer (prepareSnapshot).
    return {
      executionId: id,
      sequence: Number(row.sequence),
      state: decodePayload(row.state),
      at: Number(row.at),
    };
  }

  /**
   * The newest snapshot and up to `limit` events after it (from sequence 0 without one) in ONE
   * round trip, when `events` is a `PostgresEventStore` on this store's pool (the same object)
   * and schema; undefined for any other store (then load and read separately). Throws
   * `INVALID_ARGUMENT` for a `limit` outside 1..readLimitMax, and what `load` throws.
   */
  async loadWithTail(
    events: EventStore,
    executionId: string,
    limit: number,
  ): Promise<SnapshotWithTail | undefined> {
    readOptions({ limit });
    const target = readTarget(events);
    if (
      !(target instanceof PostgresEventStore) ||
      target.schema !== this.schema ||
      !this.handle.usesPool(target.connectionPool)
    ) {
      return undefined;
    }
    this.handle.assertOpen(this.backend);
    const id = checkExecutionId(executionId);
    const rows = await this.handle.run<SnapshotTailRow>(
      this.sql.loadWithTail,
      [id, limit],
      'load snapshot with tail',
    );
    let snapshot: Snapshot | undefined;
    const tail = [];
    for (const row of rows) {
      if (row.kind === 's') {
        // bigints come back as text; every value written was a safe integer (prepareSnapshot).
        snapshot = {
          executionId: id,
          sequence: Number(row.sequence),
          state: decodePayload(row.payload),
          at: Number(row.at),
        };
        continue;
      }
      tail.push(rowToEvent(rowFromPg(row as PgEventRow)));
    }
    // UNION ALL keeps member order in practice; sorting an already sorted page is O(n).
    tail.sort((a, b) => a.sequence - b.sequence);
    const last = tail[tail.length - 1];
    if (last !== undefined) target[rememberTailHook](id, last.sequence, last.hash);
    return { snapshot, events: tail };
  }

  /**
   * Further calls fail with `STORE_CLOSED`. Ends the pool only if the store created it (from
   * `connectionString`); a pool passed in is left to its owner. Idempotent.
   */
  async close(): Promise<void> {
    await this.handle.close();
  }
}
