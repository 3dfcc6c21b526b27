import type { JsonValue } from './envelope.js';

/** An execution's folded state as of one event. */
export interface Snapshot {
  executionId: string;
  /** The sequence of the last event folded into `state`. */
  sequence: number;
  state: JsonValue;
  /** Epoch milliseconds when it was taken. */
  at: number;
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
  close(): Promise<void>;
}
