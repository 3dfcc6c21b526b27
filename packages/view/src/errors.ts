import {
  isLoomError as isKernelLoomError,
  LoomError as KernelLoomError,
} from '@loom/event-runtime';

/**
 * Stable error codes of `@loom/view`. Callers match on `code`, never on `instanceof`. The kernel's
 * codes (`SCHEMA_NOT_MIGRATED`, `STORE_UNAVAILABLE`, `EXECUTION_NOT_FOUND`, …) and agent-loop's
 * (`APPROVAL_NOT_FOUND`, `APPROVAL_NOT_PENDING`, …) pass through with their meaning.
 */
export const ViewErrorCode = {
  /** `--db` / `LOOM_DB` is missing or is not `sqlite:<path>` or `postgres://…` (`fields.db`). */
  INVALID_DB_URL: 'INVALID_DB_URL',
  /** A bad argument (`fields.path` names it): a limit out of range, a payload that is not JSON. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** No execution with this id in the log (`fields.executionId`). */
  RUN_NOT_FOUND: 'RUN_NOT_FOUND',
  /** The driver `--db` needs (`better-sqlite3`, `pg`: optional peers) is not installed (`fields.driver`). */
  DRIVER_MISSING: 'DRIVER_MISSING',
  /** The database has no Loom schema (or an older one): migrate it with the runtime first. */
  SCHEMA_NOT_MIGRATED: 'SCHEMA_NOT_MIGRATED',
  /**
   * `startDashboard` / `loom serve` was asked to listen on a host that is not loopback without
   * `allowRemote` (`--allow-remote`); `fields.host` names it.
   */
  REMOTE_BIND_REFUSED: 'REMOTE_BIND_REFUSED',
  /** A dashboard mutation came without the token (`Authorization: Bearer <token>`): HTTP 401. */
  TOKEN_REQUIRED: 'TOKEN_REQUIRED',
  /** A dashboard mutation came with a token that is not the dashboard's: HTTP 403. */
  TOKEN_INVALID: 'TOKEN_INVALID',
  /**
   * A dashboard request whose `Host` is not the dashboard's, or a mutation whose `Origin` is
   * another site's (DNS rebinding, cross-site requests): HTTP 403.
   */
  ORIGIN_REFUSED: 'ORIGIN_REFUSED',
  /** A mutation on a dashboard started read-only (`--read-only`): HTTP 403. */
  READ_ONLY: 'READ_ONLY',
  /**
   * The database has no projection tables (`fields.where`): create them once with
   * `loom projections init` (`initProjections`). Opening a view never creates them.
   */
  PROJECTIONS_NOT_INITIALIZED: 'PROJECTIONS_NOT_INITIALIZED',
  /**
   * A fork would run an approved call of a non-rerunnable tool again (its decision is in the
   * copied log, its start mark and result are not) under a new idempotency key, without asking
   * anyone; `fields.calls` names them (`approvalId`, `tool`, `sideEffect`, `turn`, `callId`).
   * Nothing was written. Fork at a sequence before the decision, or pass `allowRerun`
   * (`loom fork --allow-rerun`, or answer yes on a terminal).
   */
  FORK_WOULD_RERUN: 'FORK_WOULD_RERUN',
  /**
   * The projection checkpoint moved under a projector (`fields.expectedPosition`): another
   * projector writes the same tables. Its transaction rolled back; run one per database.
   */
  PROJECTOR_CONFLICT: 'PROJECTOR_CONFLICT',
} as const;

/** One of the stable error codes in {@link ViewErrorCode}. */
export type ViewErrorCode = (typeof ViewErrorCode)[keyof typeof ViewErrorCode];

/** The one error class of Loom (the kernel's), re-exported with this package's codes. */
export const LoomError = KernelLoomError;
/** The one error class of Loom. */
export type LoomError<Code extends string = string> = KernelLoomError<Code>;
/** True when `error` is a Loom error (of any package) with the given code, or any code. */
export const isLoomError = isKernelLoomError;
