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

/**
 * What a suspended execution waits for, as the execution index records it: `timer` (a sleep, or a
 * wait's timeout or expiry), `signal` (a plain signal), `approval` and `question` (a signal a
 * person answers, labelled so by the flow: an agent run's approvals and questions), `child` (a
 * child execution's end). ADR 0062.
 */
export type WaitKind = 'timer' | 'signal' | 'approval' | 'question' | 'child';

/** What a writer claims when it appends, and what the append records besides events. */
export interface AppendGuard {
  /**
   * The writer's fence epoch for this execution. When given, the append is refused with
   * `FENCE_STALE` (and nothing is written) unless it equals the execution's current epoch.
   */
  fenceEpoch?: number;
  /**
   * Record the execution's new status in the execution index, atomically with the events.
   * Omit it when the status does not change (most appends), so they cost no index write. An
   * append that starts an execution (`execution.started` at sequence 0) is indexed as `running`
   * without it. With `settled`, the batch's terminal event says how it ended (`settledAs`).
   */
  status?: ExecutionStatus;
  /** With `status: 'suspended'`: when a timer should wake it (epoch ms), or null for never. */
  wakeAtMs?: number | null;
  /**
   * With `status: 'suspended'`: the last inbox signal id the writer has seen (0: none). If the
   * execution's inbox holds a newer signal when the suspension is written, the suspension is due
   * at once (its wake time becomes the append's time), decided in the same write, so a signal
   * that arrived while the execution ran is never left unread when the writer dies right after
   * suspending. A signal sent after the suspension wakes it as before (`sendSignal`). Omit it
   * for a suspension no signal can end (timers only). ADR 0033.
   */
  wakeOnSignalsAfter?: number;
  /**
   * With `status: 'suspended'`: what the execution waits for, as the index records it for
   * operators' filters (a wait for a signal with a timeout is both `signal` and `timer`). Omit
   * it when unknown: the row then says only whether it has a wake time. ADR 0062.
   */
  waitingFor?: readonly WaitKind[];
  /**
   * With `status: 'settled'`: a signal put in another execution's inbox in the same write, as
   * `sendSignal` would (a repeated idempotency key is a no-op; a suspended target is made due),
   * and skipped when that execution is missing or settled. A child that ends wakes its parent
   * this way: a process that dies right after the child's terminal event cannot leave the parent
   * waiting for a wake-up nobody will send. ADR 0047.
   */
  notify?: SignalInput;
}

/**
 * How a settled execution ended, as the index records it from the terminal event appended with
 * `status: 'settled'` (`execution.completed`, `execution.failed`, `execution.cancelled`,
 * `execution.continued_as_new`).
 */
export type SettledAs = 'completed' | 'failed' | 'cancelled' | 'continued';

/**
 * An execution's status with the settled ones told apart: `running`, `suspended`, or how it
 * settled. `settled` stands for any of the four (and for an execution settled by a writer that
 * appended no terminal event the index knows).
 */
export type DetailedExecutionStatus = ExecutionStatus | SettledAs;

/** One row of the execution index. */
export interface ExecutionSummary {
  executionId: string;
  status: ExecutionStatus;
  /** With `status: 'settled'`: how it ended (null when its terminal event was not a kernel one). */
  settledAs: SettledAs | null;
  /** The flow's name from `execution.started` (null when the log does not start with one). */
  flow: string | null;
  /** The flow's version from `execution.started` (null for an unversioned flow). */
  version: string | null;
  /**
   * The node that started it without leasing it yet (a lazy start: the `node` of
   * `execution.started`), null otherwise. Recovery takes such an unleased execution over at once
   * when that node is dead, rather than waiting for its log to go quiet.
   */
  startedBy: string | null;
  /**
   * The node whose `claimDue` (with `claimedBy`) flipped it to running, while no status change
   * followed the claim; absent otherwise. Recovery treats such an unleased execution as that
   * node's (ADR 0063).
   */
  claimedBy?: string;
  wakeAtMs: number | null;
  /**
   * While suspended: what it waits for, when the writer that suspended it said so (every kind
   * once, in {@link WaitKind} order). Absent otherwise (not suspended, or suspended by a writer
   * that gave no `waitingFor`, such as one older than schema version 14 / SQLite 13).
   */
  waitingFor?: WaitKind[];
  /** When the execution entered the index: the `at` of its `execution.started` (epoch ms). */
  createdAtMs: number;
  /** When its status last changed: the `at` of the newest event appended with a status. */
  updatedAtMs: number;
  /** `at` of the execution's newest event. */
  lastEventAt: number;
  /** The sequence its next event will have. */
  nextSequence: number;
}

/**
 * What `findExecutions` looks for: every filter given must match. Results come ordered by
 * execution id; page with `afterExecutionId` (the last id of the previous page).
 */
export interface FindExecutionsOptions {
  /**
   * `running`, `suspended`, `settled` (ended in any way), or one way of ending: `completed`,
   * `failed`, `cancelled`, `continued` (continued as new). Default: any status.
   */
  status?: DetailedExecutionStatus;
  /** Only executions of this flow (its name as `execution.started` records it). */
  flow?: string;
  /** Only this flow version; `null` for unversioned executions. Default: any version. */
  version?: string | null;
  /** Only executions created at or after this instant (epoch ms, inclusive). */
  createdFromMs?: number;
  /** Only executions created before this instant (epoch ms, exclusive). */
  createdBeforeMs?: number;
  /** Only executions whose status last changed at or after this instant (epoch ms, inclusive). */
  updatedFromMs?: number;
  /** Only executions whose status last changed before this instant (epoch ms, exclusive). */
  updatedBeforeMs?: number;
  /** Only executions whose id sorts after this one (the cursor for paging). */
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

/** A flow by name and version (null for an unversioned flow), as the execution index keeps it. */
export interface FlowKey {
  readonly name: string;
  readonly version: string | null;
}

/** What `claimDue` may claim. */
export interface ClaimDueOptions {
  /**
   * Claim only executions of these flows (and those whose flow the index does not know): a node
   * claims what it can run and leaves the rest due for a node that can (a rolling upgrade, a
   * placement). Omitted: every due execution. At most `Limits.claimFlowsMax` entries.
   */
  readonly flows?: readonly FlowKey[];
  /**
   * The claiming node's id, recorded on each claimed row (`claimedBy` in the index) until the
   * row's next status change: recovery treats a claimed execution that nobody leased as that
   * node's, so a claim whose answer was lost is taken at once by the claimer or, once it is
   * dead, by anyone (ADR 0063). Omitted: recorded as null (recovered as before).
   */
  readonly claimedBy?: string;
}

export interface ReadSignalsOptions {
  /** Signals after this id (exclusive). Default 0. */
  afterSignalId?: number;
  /** Most signals to return. Default and maximum: `Limits.readLimitMax`. */
  limit?: number;
}

/** What `EventStore.prune` removes: settled executions that ended before a time. */
export interface PruneOptions {
  /**
   * Only executions settled before this instant (epoch ms, exclusive): the index row's
   * `updatedAtMs`, which a settled execution's terminal append wrote.
   */
  endedBeforeMs: number;
  /**
   * Only these executions (each still has to be settled before `endedBeforeMs`). At most
   * `Limits.readLimitMax`. Omitted: any settled execution.
   */
  executionIds?: readonly string[];
  /** Most executions one call removes. Default and maximum: `Limits.readLimitMax`. */
  limit?: number;
}

/** One execution a prune removed, with what a receipt needs to vouch for its log. */
export interface PrunedExecution {
  executionId: string;
  /** How many events its log held (its last sequence + 1). */
  events: number;
  /** The hash of its last event: the head of the chain `verify` checked while it was kept. */
  lastHash: string;
}
