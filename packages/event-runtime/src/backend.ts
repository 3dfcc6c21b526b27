import type { EventStore } from './event-store.js';
import type { LeaseStore } from './lease-store.js';
import type { LiveStore } from './live-store.js';
import type { QueueStore } from './queue-store.js';
import type { SnapshotStore } from './snapshot-store.js';

/**
 * Everything that lives beside the event log on one database, opened by one call
 * (`openMemory()`, `openSqlite({ path })` of `@loom/event-runtime/sqlite`,
 * `openPostgres({ connectionString, schema })` of `@loom/event-runtime/postgres`) and closed by
 * one call. Hand it to `createRuntime({ backend })` of `@loom/workflow-runtime`.
 *
 * @example
 * const backend = openMemory();
 * await backend.events.append([{ executionId: 'order-1', sequence: 0, type: 'execution.started', payload: {} }]);
 * await backend.close();
 */
export interface Backend {
  /** Which database: `memory`, `sqlite` or `postgres`. */
  readonly kind: string;
  /** The event log. */
  readonly events: EventStore;
  /** Execution leases (which node drives an execution). */
  readonly leases: LeaseStore;
  /** State checkpoints of long executions. */
  readonly snapshots: SnapshotStore;
  /** Durable work queues (`runtime.enqueue`, `runtime.work`). */
  readonly queues: QueueStore;
  /**
   * The live channel beside the log (ADR 0050): text an execution streams while it works (an
   * agent's model answer), readable from every process. Every opener of this package provides
   * one; a backend put together by hand may leave it out (then live text stays in the process).
   */
  readonly live?: LiveStore;
  /**
   * Creates or upgrades the tables of every store (a no-op in memory). Safe to call from several
   * processes at once. Throws `STORE_READ_ONLY`, `SCHEMA_TOO_NEW`, store errors.
   */
  migrate(): Promise<void>;
  /**
   * Closes every store in the right order: the stores beside the log first, the event log next,
   * the connection (SQLite file handle, Postgres pool the opener created) last. Afterwards every
   * store refuses calls with `STORE_CLOSED`. Closing again does nothing.
   */
  close(): Promise<void>;
}
