/**
 * Exit codes of the `loom` command. Stable: scripts branch on them.
 * - `ok` 0: done (for `verify`: every chain checks out).
 * - `failed` 1: the command ran and found a failure (`verify`: a broken chain), or an unexpected error.
 * - `usage` 2: bad arguments or options (`--db` missing or malformed, a payload that is not JSON).
 * - `notFound` 3: no such run, approval or question.
 * - `conflict` 4: the target is not in a state that allows it (approval already decided, run ended).
 * - `unavailable` 5: the database cannot be used: unreachable, missing, not migrated, too new.
 */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  notFound: 3,
  conflict: 4,
  unavailable: 5,
} as const;

/** One of the values of {@link ExitCode}. */
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

const byErrorCode: Readonly<Record<string, ExitCode>> = {
  INVALID_DB_URL: ExitCode.usage,
  INVALID_ARGUMENT: ExitCode.usage,
  INVALID_ENVELOPE: ExitCode.usage,
  INVALID_SIGNAL: ExitCode.usage,
  INVALID_RESOLUTION: ExitCode.usage,
  RESOLUTION_REQUIRED: ExitCode.usage,
  PAYLOAD_NOT_JSON: ExitCode.usage,
  LIMIT_EXCEEDED: ExitCode.usage,
  REMOTE_BIND_REFUSED: ExitCode.usage,
  RUN_NOT_FOUND: ExitCode.notFound,
  EXECUTION_NOT_FOUND: ExitCode.notFound,
  APPROVAL_NOT_FOUND: ExitCode.notFound,
  QUESTION_NOT_FOUND: ExitCode.notFound,
  APPROVAL_NOT_PENDING: ExitCode.conflict,
  QUESTION_NOT_PENDING: ExitCode.conflict,
  APPROVAL_EXPIRED: ExitCode.conflict,
  APPROVAL_REQUEST_CHANGED: ExitCode.conflict,
  EXECUTION_SETTLED: ExitCode.conflict,
  EXECUTION_NOT_FAILED: ExitCode.conflict,
  EXECUTION_ALREADY_STARTED: ExitCode.conflict,
  FORK_WOULD_RERUN: ExitCode.conflict,
  PROJECTOR_CONFLICT: ExitCode.conflict,
  STORE_UNAVAILABLE: ExitCode.unavailable,
  DRIVER_MISSING: ExitCode.unavailable,
  SCHEMA_NOT_MIGRATED: ExitCode.unavailable,
  SCHEMA_TOO_NEW: ExitCode.unavailable,
  PROJECTIONS_NOT_INITIALIZED: ExitCode.unavailable,
  STORE_CLOSED: ExitCode.unavailable,
};

/** The exit code for a Loom error code (`failed` for any other). */
export function exitCodeOf(errorCode: string | undefined): ExitCode {
  return (errorCode === undefined ? undefined : byErrorCode[errorCode]) ?? ExitCode.failed;
}
