import { isLoomError, LoomError, type LoomErrorFields } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same
 * class, not a copy): this package's errors are `LoomError`s with the codes below.
 */
export { isLoomError, LoomError };

/**
 * Stable error codes of `@loom/plugin-content`. Callers match on `code`, never on `instanceof`.
 * A code is never reused; every package's codes are listed in docs/errors.md.
 */
export const ContentErrorCode = {
  /** An option or argument is missing, of the wrong type or out of range; `fields.option` names it. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** A content key is not `sha256:` and 64 lowercase hex digits; `fields.ref` holds what was passed. */
  CONTENT_REF_INVALID: 'CONTENT_REF_INVALID',
  /** Content is larger than the store's `contentBytesMax`; `fields.actual` and `fields.max` say by how much. */
  CONTENT_TOO_LARGE: 'CONTENT_TOO_LARGE',
  /** A content store returned bytes whose sha-256 is not their key: nothing of it is served. */
  CONTENT_CORRUPT: 'CONTENT_CORRUPT',
  /** The content store was closed and cannot serve calls any more. */
  STORE_CLOSED: 'STORE_CLOSED',
  /** The content store's driver failed (file system, SQLite, Postgres); see `cause`. */
  STORE_FAILURE: 'STORE_FAILURE',
} as const;

/** One of the stable error codes in {@link ContentErrorCode}. */
export type ContentErrorCode = (typeof ContentErrorCode)[keyof typeof ContentErrorCode];

/** An `INVALID_ARGUMENT` naming the option. */
export function invalidArgument(option: string, message: string, actual?: unknown): LoomError {
  const fields: LoomErrorFields = { option };
  if (actual !== undefined) fields.actual = typeof actual === 'object' ? String(actual) : actual;
  return new LoomError(ContentErrorCode.INVALID_ARGUMENT, message, fields);
}

/** `STORE_CLOSED` for a content store's call after `close()`. */
export function contentStoreClosed(backend: string): LoomError {
  return new LoomError(
    ContentErrorCode.STORE_CLOSED,
    `the ${backend} content store is closed: open a new one`,
    { backend },
  );
}

/** `STORE_FAILURE` wrapping a driver error. */
export function contentStoreFailure(backend: string, operation: string, cause: unknown): LoomError {
  return new LoomError(
    ContentErrorCode.STORE_FAILURE,
    `the ${backend} content store failed to ${operation}: ${(cause as Error)?.message ?? String(cause)}`,
    { backend, operation },
    cause,
  );
}
