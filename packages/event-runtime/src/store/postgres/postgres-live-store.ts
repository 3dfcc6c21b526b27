import type { Pool } from 'pg';
import { type Clock, systemClock } from '../../clock.js';
import { AppendSignal } from '../../internal/append-signal.js';
import { checkExecutionId } from '../../internal/check-execution-id.js';
import {
  checkLiveChunk,
  checkLiveName,
  checkPruneBound,
  liveReadOptions,
} from '../../internal/live-input.js';
import { storeReadOnly } from '../../internal/store-errors.js';
import type { LiveChunk, LiveChunkInput, LiveReadOptions, LiveStore } from '../../live-store.js';
import { BucketListener } from './bucket-listener.js';
import { type LiveStatements, liveStatements } from './live-statements.js';
import { liveChunksMigration } from './migrations/0009-live-chunks.js';
import { checkOut } from './pg-client.js';
import { type PgConnectionOptions, resolvePool } from './pg-pool.js';
import { PgStoreHandle } from './pg-store-handle.js';
import { decodeNotify, notifyStatement, PostCommitNotifier } from './post-commit-notifier.js';
import { checkSchemaName, quoteIdent } from './schema-name.js';
import { checkNotifications, type StoreNotifications } from './store-notifications.js';
import { TipPoller } from './tip-poller.js';
import { liveTipsStatement, readTips } from './tip-statements.js';

/** How to open a {@link PostgresLiveStore}. */
export interface PostgresLiveStoreOptions extends PgConnectionOptions {
  /** The Postgres schema holding Loom's tables (validated identifier). Default `loom`. */
  schema?: string;
  /** Refuse writes with `STORE_READ_ONLY`. Default false. */
  readOnly?: boolean;
  /** Stamps chunks (`atMs`) and arms the listener's reconnect backoff. Default: the wall clock. */
  clock?: Clock;
  /**
   * `'listen'` (default: LISTEN/NOTIFY on `<schema>_live`) or `'poll'`: no LISTEN and no NOTIFY;
   * watchers of other processes' writes are woken by one statement every `pollIntervalMs` for
   * all watched executions (ADR 0057). Use the event store's value.
   */
  notifications?: StoreNotifications;
  /**
   * With `'poll'` only: how often other processes' writes are looked for, 10 to 60,000 ms;
   * default 250. Ignored in `'listen'` mode, where notifications wake the watchers.
   */
  pollIntervalMs?: number;
}

interface LiveRow {
  position: string;
  attempt: string;
  text_offset: string;
  text: string;
  at_ms: string;
}

/** The channel every live write of a schema notifies: `<schema>_live`. */
export function liveChannelName(schema: string): string {
  return `${schema}_live`;
}

/**
 * The live channel in Postgres (`<schema>.live_chunks`, an UNLOGGED table from migration 9). A
 * write is one insert (no WAL to flush); other processes hear of it by a NOTIFY on
 * `<schema>_live` sent after the commit, folded with the other writes of the moment (one notify
 * statement in flight per store, as for appends: ADR 0028), and the watchers of this process at
 * once. The LISTEN connection is taken from the pool on the first watch.
 *
 * Error codes: those of {@link LiveStore}.
 *
 * @example
 * const events = await PostgresEventStore.open({ connectionString: process.env.DATABASE_URL });
 * const live = await PostgresLiveStore.open({ pool: events.connectionPool, schema: events.schema });
 * await live.write({ executionId: 'run-1', stream: 'decide:1', attempt: 'a', offset: 0, text: 'Hi' });
 */
export class PostgresLiveStore implements LiveStore {
  readonly backend = 'postgres';
  /** The Postgres schema holding the table. */
  readonly schema: string;
  readonly readOnly: boolean;
  private readonly handle: PgStoreHandle;
  private readonly pool: Pool;
  private readonly sql: LiveStatements;
  private readonly clock: Clock;
  private readonly channel: string;
  private readonly signal = new AppendSignal();
  private readonly notifier: PostCommitNotifier;
  private listener: BucketListener | undefined;
  /** Set in `poll` mode: other processes' writes are found by polling, never by NOTIFY. */
  private readonly poller: TipPoller | undefined;

  /**
   * Opens the store on a schema and checks its version (one round trip); an absent or older
   * schema is fine here: calls then fail with `SCHEMA_NOT_MIGRATED`. Throws `INVALID_ARGUMENT`,
   * `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`.
   */
  static async open(options: PostgresLiveStoreOptions = {}): Promise<PostgresLiveStore> {
    const schema = checkSchemaName(options.schema ?? 'loom');
    checkNotifications(options.notifications, options.pollIntervalMs);
    const resolved = resolvePool(options);
    const handle = new PgStoreHandle(resolved, {
      schema,
      requiredVersion: liveChunksMigration.version,
      store: 'live store',
    });
    try {
      await handle.inspectSchema();
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new PostgresLiveStore(handle, resolved.pool, options);
  }

  private constructor(handle: PgStoreHandle, pool: Pool, options: PostgresLiveStoreOptions) {
    this.handle = handle;
    this.pool = pool;
    this.schema = handle.schema;
    this.readOnly = options.readOnly ?? false;
    this.clock = options.clock ?? systemClock;
    this.sql = liveStatements(quoteIdent(handle.schema), handle.schema);
    this.channel = liveChannelName(handle.schema);
    const notify = notifyStatement(handle.schema);
    this.notifier = new PostCommitNotifier(async (channels, payloads) => {
      await pool.query({ name: notify.name, text: notify.text, values: [channels, payloads] });
    });
    const { notifications, pollIntervalMs } = checkNotifications(
      options.notifications,
      options.pollIntervalMs,
    );
    if (notifications === 'poll') {
      const tips = liveTipsStatement(quoteIdent(handle.schema), handle.schema);
      this.poller = new TipPoller({
        readTips: (executionIds) =>
          readTips(
            (statement, values) => handle.run(statement, values, 'poll live tips'),
            tips,
            executionIds,
          ),
        intervalMs: pollIntervalMs,
        clock: this.clock,
      });
    }
  }

  async write(input: LiveChunkInput): Promise<boolean> {
    this.assertWritable('write a live chunk');
    const c = checkLiveChunk(input);
    const rows = await this.handle.run<{ position: string }>(
      this.sql.write,
      [c.executionId, c.stream, c.attempt, c.offset, c.text, this.clock.now()],
      'write live chunk',
    );
    if (rows.length === 0) return false;
    if (this.poller !== undefined) {
      this.poller.emit(c.executionId);
      return true;
    }
    this.notifier.committed(this.channel, c.executionId);
    this.signal.emit(c.executionId);
    return true;
  }

  async read(executionId: string, stream: string, options?: LiveReadOptions): Promise<LiveChunk[]> {
    this.handle.assertOpen(this.backend);
    const id = checkExecutionId(executionId);
    const name = checkLiveName(stream, 'stream');
    const { afterPosition, limit } = liveReadOptions(options);
    const rows = await this.handle.run<LiveRow>(
      this.sql.read,
      [id, name, afterPosition, limit],
      'read live chunks',
    );
    // bigints come back as text; every one written was a safe integer.
    return rows.map((row) => ({
      executionId: id,
      stream: name,
      attempt: row.attempt,
      offset: Number(row.text_offset),
      text: row.text,
      position: Number(row.position),
      atMs: Number(row.at_ms),
    }));
  }

  watch(executionId: string, wake: () => void): () => void {
    this.handle.assertOpen(this.backend);
    const id = checkExecutionId(executionId);
    if (this.poller !== undefined) {
      const unwatch = this.poller.watch(id, wake);
      // Watching starts at once in this mode: a read after this first wake misses nothing (the
      // poller's first tip read wakes again).
      let watching = true;
      queueMicrotask(() => {
        if (watching) wake();
      });
      return () => {
        watching = false;
        unwatch();
      };
    }
    const unwatch = this.signal.watch(id, wake);
    this.listener ??= new BucketListener({
      connect: async () => (await checkOut(this.pool)).client,
      onNotification: (_channel, payload) => {
        for (const notified of decodeNotify(payload)) this.signal.emit(notified);
      },
      onReconnect: () => this.signal.emitAll(),
      clock: this.clock,
    });
    // Woken once the LISTEN is in effect: a read after that cannot miss a notification.
    const release = this.listener.retain([this.channel], wake);
    return () => {
      unwatch();
      release();
    };
  }

  async drop(executionId: string, stream: string): Promise<void> {
    this.assertWritable('drop a live stream');
    const id = checkExecutionId(executionId);
    const name = checkLiveName(stream, 'stream');
    await this.handle.run(this.sql.drop, [id, name], 'drop live stream');
  }

  async prune(beforeMs: number): Promise<number> {
    this.assertWritable('prune live chunks');
    const bound = checkPruneBound(beforeMs);
    const rows = await this.handle.run<{ pruned: string }>(
      this.sql.prune,
      [bound],
      'prune live chunks',
    );
    return Number(rows[0]?.pruned ?? 0);
  }

  async close(): Promise<void> {
    this.poller?.close();
    await this.notifier.close();
    await this.listener?.close();
    await this.handle.close();
  }

  private assertWritable(operation: string): void {
    this.handle.assertOpen(this.backend);
    if (this.readOnly) throw storeReadOnly('postgres live', operation);
  }
}
