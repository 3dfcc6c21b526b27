import type { JsonValue, StoredEvent } from './envelope.js';
import type { EventStore } from './event-store.js';

/** An execution's folded state as of one event. */
export interface Snapshot {
  executionId: string;
  /** The sequence of the last event folded into `state`. */
  sequence: number;
  state: JsonValue;
  /** Epoch milliseconds when it was taken. */
  at: number;
}

/** What {@link SnapshotStore.loadWithTail} returns. */
export interface SnapshotWithTail {
  snapshot: Snapshot | undefined;
  /** Events after the snapshot (from sequence 0 without one), in order, at most `limit`. */
  events: StoredEvent[];
}

/**
 * Checkpoints of execution state, so loading an execution reads the newest snapshot and then
 * only the events after it. Keeps the newest snapshot per execution: a save older than (or at
 * the same sequence as) the stored one is ignored, so racing savers cannot move it backwards.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` for bad ids or sequences,
 * `PAYLOAD_NOT_JSON` / `LIMIT_EXCEEDED` for a state JSON cannot hold, `STORE_BUSY`,
 * `STORE_UNAVAILABLE`, `STORE_CLOSED`.
 */
export interface SnapshotStore {
  /** Store `snapshot` unless a snapshot at the same or a later sequence is already stored. */
  save(snapshot: Snapshot): Promise<void>;
  /** The newest snapshot, or undefined. */
  load(executionId: string): Promise<Snapshot | undefined>;
  /**
   * Optional: the newest snapshot AND the first `limit` events after it (from sequence 0 when
   * there is none), in one round trip. Returns undefined when `events` is not a store this one
   * can read itself (another database, pool, schema or a wrapper); the caller
   * then loads the snapshot and reads the events in two calls. `loadState` uses it so a short
   * execution (no snapshot yet) costs one round trip, not a snapshot miss and then a read.
   */
  loadWithTail?(
    events: EventStore,
    executionId: string,
    limit: number,
  ): Promise<SnapshotWithTail | undefined>;
  /**
   * Optional: drops the snapshots of executions a prune removed from the log. A store on the
   * log's own database needs none (the log's `prune` deletes its rows in the same write); a
   * store elsewhere (in memory) implements it, and a runtime's `prune` calls it after the log's.
   */
  forget?(executionIds: readonly string[]): Promise<void>;
  close(): Promise<void>;
}
