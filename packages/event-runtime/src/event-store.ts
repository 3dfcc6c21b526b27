import type {
  AppendGuard,
  ClaimDueOptions,
  EventEnvelope,
  ExecutionSummary,
  FindExecutionsOptions,
  PrunedExecution,
  PruneOptions,
  ReadAllOptions,
  ReadOptions,
  ReadSignalsOptions,
  SignalInput,
  StoredEvent,
  StoredSignal,
} from './envelope.js';
import type { LoomError } from './errors.js';
import type { LeaseStore } from './lease-store.js';

/** Per-execution fence epochs. A takeover advances the epoch; appends with an older one fail. */
export interface FenceStore {
  /** The execution's current epoch (0 when it was never advanced). */
  current(executionId: string): Promise<number>;
  /** Atomically advance the epoch and return the new value. */
  advance(executionId: string): Promise<number>;
}

/** What a subscription follows: the global log, or one execution. */
export interface SubscribeOptions {
  /** Follow one execution only (by sequence). Without it, the whole log (by position). */
  executionId?: string;
  /** Global subscriptions: deliver events after this position (exclusive). Default 0. */
  afterPosition?: number;
  /** Execution subscriptions: deliver events from this sequence (inclusive). Default 0. */
  fromSequence?: number;
  /** Most events per handler call. Default 500. */
  batchSize?: number;
  /**
   * Called once if the handler or a read fails; the subscription is closed after it. A read the
   * store cannot serve for now (`STORE_UNAVAILABLE`, `STORE_BUSY`: a restart, a failover) is
   * tried again with backoff (50 ms doubling to 5 s) instead, and is not reported.
   */
  onError?: (error: unknown) => void;
}

/** Receives events in order, in batches; the next batch waits for the returned promise. */
export type SubscriptionHandler = (events: StoredEvent[]) => void | Promise<void>;

export interface Subscription {
  /** Stop delivery; resolves once no handler call is running. */
  close(): Promise<void>;
}

/** Outcome of `verify`: either the whole chain checks out, or where it first breaks. */
export type VerifyResult =
  | { ok: true; executionId: string; events: number; lastHash: string | null }
  | {
      ok: false;
      executionId: string;
      events: number;
      brokenAtSequence: number;
      reason: string;
    };

/**
 * The event log. One interface, three backends (memory, SQLite, Postgres), one conformance
 * suite (`@loom/event-runtime/testing`).
 *
 * Error codes: `EXECUTION_ALREADY_STARTED`, `SEQUENCE_CONFLICT`, `FENCE_STALE`,
 * `INVALID_ENVELOPE`, `PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`, `INVALID_ARGUMENT`, `STORE_BUSY`,
 * `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_READ_ONLY`, `STORE_FAILURE`.
 */
export interface EventStore {
  /** Which backend this is, for logs and benchmarks. */
  readonly backend: string;
  readonly fences: FenceStore;
  /**
   * Atomically append one or more envelopes of one execution, starting at its next sequence.
   * All or nothing: on any error nothing is written. Returns the events as stored.
   */
  append(envelopes: readonly EventEnvelope[], guard?: AppendGuard): Promise<StoredEvent[]>;
  /** Events of one execution in sequence order. */
  read(executionId: string, options?: ReadOptions): Promise<StoredEvent[]>;
  /** Events of all executions in the store's commit order. */
  readAll(options?: ReadAllOptions): Promise<StoredEvent[]>;
  /**
   * Executions in the index with the given status, ordered by id (suspended ones filtered by
   * due time when asked). Recovery and timers use it; it never scans the event log.
   */
  findExecutions(options: FindExecutionsOptions): Promise<ExecutionSummary[]>;
  /**
   * Put a signal in an execution's inbox, and make a suspended execution due now (so a timer
   * service wakes it) in the same write. A repeated idempotency key is a no-op that returns the
   * first signal's id with `duplicate: true`, also after the target settled (a step that sent a
   * signal and died before its record sends it again; the receiver may have ended meanwhile).
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_SETTLED`, `INVALID_ENVELOPE`,
   * `PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`, store errors.
   */
  sendSignal(signal: SignalInput): Promise<{ signalId: number; duplicate: boolean }>;
  /** An execution's inbox in arrival order. */
  readSignals(executionId: string, options?: ReadSignalsOptions): Promise<StoredSignal[]>;
  /**
   * Claim suspended executions that are due (`wakeAtMs <= nowMs`): each is flipped to `running`
   * atomically, so of several nodes claiming at once exactly one gets it. Returns the ids. With
   * `options.flows`, only executions of those flows (or of a flow the index does not know) are
   * claimed; the others stay due. Throws `INVALID_ARGUMENT`, store errors.
   */
  claimDue(nowMs: number, limit: number, options?: ClaimDueOptions): Promise<string[]>;
  /**
   * Give back executions a `claimDue` returned that the claimer cannot drive (another live node
   * still holds the lease): each one whose index row is still `running` is flipped back to
   * `suspended`, due at `nowMs`, so the next claim of any node takes it (ADR 0052). Settled and
   * suspended ones are left as they are. Returns the ids given back. Throws `INVALID_ARGUMENT`
   * (more than `Limits.readLimitMax` ids, a bad `nowMs`), `INVALID_ENVELOPE` / `LIMIT_EXCEEDED`
   * (a bad id), store errors.
   */
  unclaimDue(executionIds: readonly string[], nowMs: number): Promise<string[]>;
  /**
   * Removes settled executions whose index row settled before `options.endedBeforeMs`, oldest
   * id first, at most `options.limit` per call: each one's events, index row, fence, inbox, and
   * (where they share the store's database) its snapshot, lease and live chunks, all in one
   * write. Running and suspended executions are never removed. Returns what was removed with
   * each log's event count and last hash, for a receipt (ADR 0053). Its events leave `readAll`
   * (positions are not reused). A removed id can be started again as a new execution. The store
   * knows no parents and writes no receipt: `pruneExecutions` (what `runtime.prune` calls) keeps a
   * child whose parent still runs and records what it removes.
   *
   * Settled executions get no appends from a runtime, and the store does not refuse one: a
   * prune racing such an append may leave the append's events without an index row (ADR 0053).
   *
   * Error codes: `INVALID_ARGUMENT` (bad options), `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` (a bad
   * id), `STORE_READ_ONLY`, store errors.
   */
  prune(options: PruneOptions): Promise<PrunedExecution[]>;
  /** Deliver events as they are appended, after catching up from the given cursor. */
  subscribe(options: SubscribeOptions, handler: SubscriptionHandler): Subscription;
  /** Recompute the execution's hash chain from its stored events. */
  verify(executionId: string): Promise<VerifyResult>;
  /** Release connections and stop subscriptions. Further calls fail with `STORE_CLOSED`. */
  close(): Promise<void>;
  /**
   * The lease store on this store's own database (the same file or pool and schema), which a
   * runtime given no `leases` uses, so that crash recovery knows by default which nodes are
   * alive. The same object on every call; undefined on a read-only store (nothing to drive).
   * Optional: a store that cannot share its database (in-memory, decorators over several
   * stores) leaves it out, and such a runtime takes no leases.
   */
  defaultLeaseStore?(): LeaseStore | undefined;
}

/**
 * A store that can run caller work and an append in one database transaction: the basis of
 * exactly-once steps (`ctx.transaction`). SQLite and Postgres implement it; memory does not.
 */
export interface TransactionalEventStore extends EventStore {
  /**
   * Runs `work` with the store's transaction handle, then appends `envelopes(result)`, and
   * commits both or neither. If `work` throws, nothing is written and the error is rethrown.
   */
  transact<T>(
    work: (tx: unknown) => T | Promise<T>,
    envelopes: (result: T) => readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<{ result: T; stored: StoredEvent[] }>;
}

/** True when the store can run transactional steps. */
export function isTransactional(store: EventStore): store is TransactionalEventStore {
  return typeof (store as Partial<TransactionalEventStore>).transact === 'function';
}

/** One `append` call, as a batch of them hands it to {@link BatchAppendingEventStore.appendBatch}. */
export interface AppendRequest {
  envelopes: readonly EventEnvelope[];
  guard?: AppendGuard | undefined;
}

/** What one request of a batch came to: its events as stored, or the error its `append` would throw. */
export type AppendOutcome = { ok: true; stored: StoredEvent[] } | { ok: false; error: LoomError };

/**
 * A store that can append for many executions in one round trip: what a runtime's group commit
 * (ADR 0040) and `CoalescingEventStore` send. Postgres (one statement, one transaction), SQLite
 * (one transaction, a savepoint per request), memory and `ShardedEventStore` (one write per
 * shard) implement it.
 */
export interface BatchAppendingEventStore extends EventStore {
  /**
   * Appends every request in one write, all or nothing PER REQUEST: a request refused by its
   * fence or its sequence (or invalid) gets its own typed error in its outcome, and the others
   * still commit. The requests must be for distinct executions (a repeated one is refused with
   * `INVALID_ARGUMENT`). Outcomes come back in request order, each only after its commit.
   * When the write itself fails (a lost connection, a failed commit), every request's outcome is
   * that error; a store may instead reject the whole call with it (as when the store cannot take
   * the call at all: `STORE_CLOSED`, `STORE_READ_ONLY`, `SCHEMA_NOT_MIGRATED`). Either way no
   * request of a failed write is known to be durable: callers re-read the log.
   */
  appendBatch(requests: readonly AppendRequest[]): Promise<AppendOutcome[]>;
}

/** True when the store can append for many executions in one round trip. */
export function canAppendBatch(store: EventStore): store is BatchAppendingEventStore {
  return typeof (store as Partial<BatchAppendingEventStore>).appendBatch === 'function';
}
