import { ErrorCode, LoomError, type LoomErrorFields } from '../errors.js';

/** `EXECUTION_ALREADY_STARTED`: sequence 0 of an existing execution. */
export function alreadyStarted(executionId: string): LoomError {
  return new LoomError(
    ErrorCode.EXECUTION_ALREADY_STARTED,
    `execution ${executionId} already exists (its sequence 0 is in the log); start it under a new ` +
      'id or attach to the existing one',
    { executionId, sequence: 0 },
  );
}

/** `SEQUENCE_CONFLICT`: an append that is not at the execution's next sequence. */
export function sequenceConflict(executionId: string, expected: number, actual: number): LoomError {
  const what = actual < expected ? 'already holds that sequence' : 'would leave a gap';
  return new LoomError(
    ErrorCode.SEQUENCE_CONFLICT,
    `append to execution ${executionId} at sequence ${actual} refused: the next sequence is ` +
      `${expected} (the log ${what}); another writer got there first, re-read the log`,
    { executionId, expected, actual, sequence: actual },
  );
}

/** `FENCE_STALE`: the writer's epoch is not the execution's current epoch. */
export function fenceStale(executionId: string, current: number, claimed: number): LoomError {
  return new LoomError(
    ErrorCode.FENCE_STALE,
    `append to execution ${executionId} refused: the writer holds fence epoch ${claimed} but the ` +
      `execution is at epoch ${current}; another node took it over, so stop driving it`,
    { executionId, expected: current, actual: claimed },
  );
}

/** `STORE_CLOSED`. */
export function storeClosed(backend: string): LoomError {
  return new LoomError(ErrorCode.STORE_CLOSED, `the ${backend} event store is closed`, { backend });
}

/** `STORE_READ_ONLY`. */
export function storeReadOnly(backend: string, operation: string): LoomError {
  return new LoomError(
    ErrorCode.STORE_READ_ONLY,
    `cannot ${operation}: the ${backend} store was opened read-only`,
    { backend, operation },
  );
}

/**
 * The small set of failure kinds every backend maps its driver errors to, so kernel logic never
 * knows which database it is on: a duplicate key (`23505`, `SQLITE_CONSTRAINT_PRIMARYKEY`), a
 * lock held too long, a lost connection (or an unreadable file), a full disk (`SQLITE_FULL`,
 * `53100`), a database that refuses writes (`SQLITE_READONLY`, `25006`), anything else.
 */
export type StoreFailureKind =
  | 'unique_violation'
  | 'busy'
  | 'connection_lost'
  | 'full'
  | 'read_only'
  | 'other';

/**
 * The code a driver failure of each kind surfaces as, when the backend did not turn it into
 * something more precise first (a `unique_violation` on an append is `EXECUTION_ALREADY_STARTED`
 * or `SEQUENCE_CONFLICT`, decided by the backend that knows which key it was).
 */
const failureCodes: Readonly<Record<StoreFailureKind, ErrorCode>> = {
  unique_violation: ErrorCode.STORE_FAILURE,
  busy: ErrorCode.STORE_BUSY,
  connection_lost: ErrorCode.STORE_UNAVAILABLE,
  full: ErrorCode.STORE_FULL,
  read_only: ErrorCode.STORE_READ_ONLY,
  other: ErrorCode.STORE_FAILURE,
};

/** `STORE_BUSY`, `STORE_UNAVAILABLE`, `STORE_FULL`, `STORE_READ_ONLY` or `STORE_FAILURE`. */
export function storeFailureCode(kind: StoreFailureKind): ErrorCode {
  return failureCodes[kind];
}

/**
 * Wraps a driver error of a known kind as a typed {@link LoomError} with that kind's code, the
 * backend's message (which says what to do) and the driver error as `cause`, never lost.
 */
export function storeFailure(
  kind: StoreFailureKind,
  message: string,
  fields: LoomErrorFields,
  cause: unknown,
): LoomError {
  return new LoomError(storeFailureCode(kind), message, fields, cause);
}
