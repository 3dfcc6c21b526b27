/**
 * Stable error codes of `@loom/event-runtime`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused. Other
 * packages add their own codes (`MiddlewareErrorCode`, `SchedulerErrorCode`, …) to this same
 * {@link LoomError}; docs/errors.md lists them all.
 */
export const ErrorCode = {
  /** Sequence 0 of an execution that already exists was appended again. */
  EXECUTION_ALREADY_STARTED: 'EXECUTION_ALREADY_STARTED',
  /** An append was not at the execution's next sequence (a clash or a gap). */
  SEQUENCE_CONFLICT: 'SEQUENCE_CONFLICT',
  /** The writer's fence epoch is not the execution's current one: someone took over. */
  FENCE_STALE: 'FENCE_STALE',
  /**
   * An envelope is malformed: a missing, unknown or ill-typed field, or an execution id, event
   * type or signal name that is not well-formed text (a lone surrogate or NUL; `fields.path` and
   * `fields.position` say where).
   */
  INVALID_ENVELOPE: 'INVALID_ENVELOPE',
  /** A payload is not representable as JSON (function, cycle, undefined, BigInt, NaN, …). */
  PAYLOAD_NOT_JSON: 'PAYLOAD_NOT_JSON',
  /** A named limit (payload bytes, events per append, id length, …) was exceeded. */
  LIMIT_EXCEEDED: 'LIMIT_EXCEEDED',
  /**
   * An option passed to a store call is invalid (negative limit, unknown position, a queue name,
   * key or lease owner with a lone surrogate or NUL, …).
   */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /**
   * The database is locked by another writer past the busy timeout (or, on Postgres, a deadlock
   * or serialization failure). Transient: the runtime retries it like `STORE_UNAVAILABLE`.
   */
  STORE_BUSY: 'STORE_BUSY',
  /**
   * The connection to the database was lost or could not be made: server down or restarting,
   * connection killed, `connectTimeoutMs` elapsed, or the login refused (unknown role or
   * database, wrong password; the message names which). Transient: the runtime resumes an
   * execution whose append failed this way from the log after a backoff (`storeRetryDelayMs`,
   * `storeRetryDelayMaxMs`, `storeRetriesMax`), and `result()` waits meanwhile.
   */
  STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
  /** The store was closed and cannot serve calls any more. */
  STORE_CLOSED: 'STORE_CLOSED',
  /** A write was attempted on a store opened read-only. */
  STORE_READ_ONLY: 'STORE_READ_ONLY',
  /** The database has no Loom schema (or an older one): run `migrate()` first. */
  SCHEMA_NOT_MIGRATED: 'SCHEMA_NOT_MIGRATED',
  /** The database's schema was written by a newer Loom than this one. */
  SCHEMA_TOO_NEW: 'SCHEMA_TOO_NEW',
  /**
   * The database has no room for the write: the disk is full, or SQLite's `max_page_count` was
   * reached (Postgres: `53100`). Nothing of the write was stored. Transient: the runtime resumes
   * an execution whose append failed this way from the log after a backoff, like
   * `STORE_UNAVAILABLE`, so it goes on once space is freed.
   */
  STORE_FULL: 'STORE_FULL',
  /** The driver failed in a way the store does not classify; see `cause`. */
  STORE_FAILURE: 'STORE_FAILURE',
  /** A replay asked for a different step than the log recorded at that position. */
  NON_DETERMINISM: 'NON_DETERMINISM',
  /** A flow used one step name twice in one execution. */
  DUPLICATE_STEP_NAME: 'DUPLICATE_STEP_NAME',
  /** A step name is empty, not a string, or too long. */
  INVALID_STEP_NAME: 'INVALID_STEP_NAME',
  /** A step's effect threw; `fields.error` holds what it threw, as recorded in the log. */
  STEP_FAILED: 'STEP_FAILED',
  /**
   * A step's attempt was found in flight by more than `stepInterruptionsMax` resumes in a row (its
   * process died or lost the execution each time while the effect ran): it is failed as poison
   * instead of run again (ADR 0031). The flow sees `STEP_FAILED` with this as `fields.error`.
   */
  STEP_POISONED: 'STEP_POISONED',
  /** A child execution (`ctx.child`) failed or was cancelled; `fields.error` says why. */
  CHILD_FAILED: 'CHILD_FAILED',
  /** A flow threw, or its execution was recorded as failed; `fields.error` holds the reason. */
  EXECUTION_FAILED: 'EXECUTION_FAILED',
  /** The execution was cancelled; `fields.reason` says why. */
  EXECUTION_CANCELLED: 'EXECUTION_CANCELLED',
  /**
   * `retry(executionId)` was asked of an execution that has not failed (it runs, completed, was
   * cancelled or continued as new); `fields.status` says which. Only a failed execution reopens.
   */
  EXECUTION_NOT_FAILED: 'EXECUTION_NOT_FAILED',
  /** A signal was sent to an execution that already settled: nothing would ever receive it. */
  EXECUTION_SETTLED: 'EXECUTION_SETTLED',
  /** No execution with that id is in the log. */
  EXECUTION_NOT_FOUND: 'EXECUTION_NOT_FOUND',
  /** The log names a flow (or flow version) this runtime has not registered. */
  FLOW_NOT_REGISTERED: 'FLOW_NOT_REGISTERED',
  /** A flow definition is malformed (no name, no run function, a bad version). */
  INVALID_FLOW: 'INVALID_FLOW',
  /** This node stopped driving the execution: its lease or fence was taken over. */
  OWNERSHIP_LOST: 'OWNERSHIP_LOST',
  /**
   * Another live process holds this runtime's `nodeId` in the lease store: two processes were
   * given one node id. This one runs without the crash fast path (it waits out leases, as if it
   * had no node identity); give each process its own `nodeId`, or leave it unset.
   */
  NODE_ID_IN_USE: 'NODE_ID_IN_USE',
  /**
   * This runtime's claim on its `nodeId` ended while it lives (its Postgres claim session was
   * terminated, timed out, or lost its server), reported through `onError` and the
   * `node:claim_lost` event: other nodes read it as dead meanwhile. It claims again with backoff
   * (`node:claimed` once it holds the id again) and takes no new work until then.
   */
  NODE_CLAIM_LOST: 'NODE_CLAIM_LOST',
  /** The runtime was shut down; the execution stays in the log for another node to resume. */
  RUNTIME_SHUT_DOWN: 'RUNTIME_SHUT_DOWN',
  /** A transactional step was asked of a store that cannot run one. */
  TRANSACTIONS_UNSUPPORTED: 'TRANSACTIONS_UNSUPPORTED',
  /**
   * An operation (`step`, `sleep`, `now`, …) was called on a flow context after its flow
   * function returned or threw: nothing ran and nothing was recorded. Await every operation
   * inside the flow function; never keep the context for later.
   */
  CONTEXT_CLOSED: 'CONTEXT_CLOSED',
  /**
   * An event read back from the log does not have the shape its type requires (a missing or
   * ill-typed payload field), or is out of order. `fields.executionId`, `fields.sequence`,
   * `fields.type` and `fields.path` name the event and the field. The log was changed outside
   * Loom or by a broken writer: the execution cannot resume until the event is restored.
   */
  LOG_CORRUPT: 'LOG_CORRUPT',
} as const;

/** One of the stable error codes in {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface LoomErrorFields {
  executionId?: string;
  sequence?: number;
  expected?: unknown;
  actual?: unknown;
  limit?: string;
  /** The field at fault (`executionId`, `type`, `owner`, `$.items[2]` in a payload, …). */
  path?: string;
  /** The code unit index of a lone surrogate or NUL in the string at `path`. */
  position?: number;
  [key: string]: unknown;
}

/**
 * The one error class of Loom, for every package: no package defines another. `code` is stable
 * and documented; `fields` carry the facts (`executionId`, `sequence`, `expected`, `actual`, …);
 * `cause` the driver's error, if any. Match with {@link isLoomError} and `code`.
 *
 * @example
 * try {
 *   await handle.result();
 * } catch (error) {
 *   if (isLoomError(error, ErrorCode.EXECUTION_CANCELLED)) console.log(error.fields.reason);
 *   else throw error;
 * }
 */
export class LoomError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly fields: Readonly<LoomErrorFields>;

  /**
   * `Code` narrows the code's type (`LoomError<MiddlewareErrorCode>`, or what `isLoomError(e,
   * code)` infers); plain `LoomError` is any Loom error, of any package.
   */
  constructor(code: Code, message: string, fields: LoomErrorFields = {}, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'LoomError';
    this.code = code;
    this.fields = fields;
  }

  get executionId(): string | undefined {
    return this.fields.executionId;
  }
}

/**
 * True when `error` is a {@link LoomError}, of any package, with the given code (any code when
 * omitted). Matches by `name` and `code`, so it works across installed copies of a package.
 */
export function isLoomError<Code extends string = string>(
  error: unknown,
  code?: Code,
): error is LoomError<Code> {
  if (typeof error !== 'object' || error === null) return false;
  const candidate = error as { name?: unknown; code?: unknown };
  if (candidate.name !== 'LoomError' || typeof candidate.code !== 'string') return false;
  return code === undefined || candidate.code === code;
}
