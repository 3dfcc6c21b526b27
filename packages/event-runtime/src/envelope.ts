/** A JSON value as the log stores it: what `JSON.parse` can give back. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * One event of an execution, as a writer hands it to `append`.
 * `sequence` is 0, 1, 2, … without gaps per execution; `at` is milliseconds since the Unix
 * epoch (the store's clock fills it when omitted).
 */
export interface EventEnvelope<P extends JsonValue = JsonValue> {
  executionId: string;
  sequence: number;
  type: string;
  payload: P;
  at?: number;
}

/**
 * An event as the store keeps it: the envelope plus a global `position` assigned by the store,
 * and the hash chain (`hash` covers `prevHash` and the stored form of this event).
 */
export interface StoredEvent<P extends JsonValue = JsonValue> {
  executionId: string;
  sequence: number;
  type: string;
  payload: P;
  at: number;
  position: number;
  prevHash: string | null;
  hash: string;
}

/** What a writer claims when it appends. */
export interface AppendGuard {
  /**
   * The writer's fence epoch for this execution. When given, the append is refused with
   * `FENCE_STALE` (and nothing is written) unless it equals the execution's current epoch.
   */
  fenceEpoch?: number;
}

export interface ReadOptions {
  /** First sequence to return (inclusive). Default 0. */
  fromSequence?: number;
  /** Most events to return. Default and maximum: `Limits.readLimitMax`. */
  limit?: number;
}

export interface ReadAllOptions {
  /**
   * Return events after this position (exclusive): the `position` of the last event you
   * processed, or 0 to start from the beginning. Exclusive because on Postgres the global order
   * is a commit-safe order whose cursor is an existing event (see ADR 0001).
   */
  afterPosition?: number;
  /** Most events to return. Default and maximum: `Limits.readLimitMax`. */
  limit?: number;
}
