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

/**
 * Where an execution stands, as the execution index records it: `running` (someone drives it
 * or should), `suspended` (waiting for a timer or a signal, driven by nobody), `settled`
 * (completed, failed, cancelled or continued as new).
 */
export type ExecutionStatus = 'running' | 'suspended' | 'settled';

/** What a writer claims when it appends, and what the append records besides events. */
export interface AppendGuard {
  /**
   * The writer's fence epoch for this execution. When given, the append is refused with
   * `FENCE_STALE` (and nothing is written) unless it equals the execution's current epoch.
   */
  fenceEpoch?: number;
  /**
   * Record the execution's new status in the execution index, atomically with the events.
   * Omit it when the status does not change (most appends), so they cost no index write.
   */
  status?: ExecutionStatus;
  /** With `status: 'suspended'`: when a timer should wake it (epoch ms), or null for never. */
  wakeAtMs?: number | null;
}

/** One row of the execution index. */
export interface ExecutionSummary {
  executionId: string;
  status: ExecutionStatus;
  wakeAtMs: number | null;
  /** `at` of the execution's newest event. */
  lastEventAt: number;
  /** The sequence its next event will have. */
  nextSequence: number;
}

export interface FindExecutionsOptions {
  status: ExecutionStatus;
  /** Only executions whose id sorts after this one (for paging). */
  afterExecutionId?: string;
  /** Only suspended executions due at or before this instant (epoch ms). */
  dueAtOrBeforeMs?: number;
  /** Most rows to return. Default and maximum: `Limits.readLimitMax`. */
  limit?: number;
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

/** A signal as a sender hands it to `sendSignal`. */
export interface SignalInput {
  executionId: string;
  /** What the flow waits for (`ctx.waitForSignal(name)`). */
  name: string;
  payload: JsonValue;
  /** A second signal with the same key for the same execution is a no-op (delivered once). */
  idempotencyKey?: string;
}

/** A signal in an execution's inbox. */
export interface StoredSignal {
  executionId: string;
  /** 1, 2, 3, … per execution, in arrival order. */
  signalId: number;
  name: string;
  payload: JsonValue;
  idempotencyKey: string | null;
  at: number;
}

export interface ReadSignalsOptions {
  /** Signals after this id (exclusive). Default 0. */
  afterSignalId?: number;
  /** Most signals to return. Default and maximum: `Limits.readLimitMax`. */
  limit?: number;
}
