import { isLoomError, LoomError, type LoomErrorFields } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same
 * class, not a copy): this package's errors are `LoomError`s with the codes below.
 */
export { isLoomError, LoomError };

/**
 * Stable error codes of `@loom/reasoning`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused; every
 * package's codes are listed in docs/errors.md.
 */
export const ReasoningErrorCode = {
  /**
   * The provider said "too many requests" (HTTP 429). `fields.retryAfterMs` is the wait it asked
   * for (from `retry-after-ms` or `retry-after`), or absent. Retryable; the router falls back.
   */
  MODEL_RATE_LIMITED: 'MODEL_RATE_LIMITED',
  /**
   * The provider could not serve: HTTP 5xx (`fields.status`), 408/409, or no connection (refused,
   * reset, DNS). `fields.retryAfterMs` when a 503/529 said when to come back. Retryable; the
   * router falls back.
   */
  MODEL_UNAVAILABLE: 'MODEL_UNAVAILABLE',
  /**
   * The provider answered something that is not its API's format: malformed JSON, a body that
   * fails the provider's schema, or a stream cut off before its end (including one that ended
   * cleanly without its completion signal: the AI SDK's finish reason `'interrupted'`). Not
   * retried by default.
   */
  MODEL_BAD_RESPONSE: 'MODEL_BAD_RESPONSE',
  /**
   * The model was too slow: no first stream part within `timeoutMs`, a started stream silent for
   * `idleTimeoutMs`, or no `generate` answer within `generateTimeoutMs`. `fields.option` names
   * the option, `fields.timeoutMs` its value. Retryable.
   */
  MODEL_TIMEOUT: 'MODEL_TIMEOUT',
  /**
   * The provider refused the request (HTTP 4xx other than 408/409/429: a bad key, an unknown
   * model, a prompt too long). `fields.status`, `fields.body`. Retrying the same request cannot help.
   */
  MODEL_BAD_REQUEST: 'MODEL_BAD_REQUEST',
  /** No route of the router carries every requested tag (`fields.tags`). */
  NO_ROUTE: 'NO_ROUTE',
  /** A scripted `StubModel` was called more times than its script has turns (`fields.calls`). */
  STUB_SCRIPT_EXHAUSTED: 'STUB_SCRIPT_EXHAUSTED',
  /** An option or a request field is missing, of the wrong type or out of range; `fields.option` names it. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
} as const;

/** One of the stable error codes in {@link ReasoningErrorCode}. */
export type ReasoningErrorCode = (typeof ReasoningErrorCode)[keyof typeof ReasoningErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface ReasoningErrorFields extends LoomErrorFields {
  /** The provider (or route) that failed. */
  provider?: string;
  model?: string;
  /** The HTTP status, when there was one. */
  status?: number;
  retryAfterMs?: number;
  timeoutMs?: number;
  option?: string;
  [key: string]: unknown;
}

/**
 * True for the failures worth another attempt or another route: `MODEL_RATE_LIMITED`,
 * `MODEL_UNAVAILABLE`, `MODEL_TIMEOUT`.
 */
export function isRetryableModelError(error: unknown): boolean {
  return (
    isLoomError(error, ReasoningErrorCode.MODEL_RATE_LIMITED) ||
    isLoomError(error, ReasoningErrorCode.MODEL_UNAVAILABLE) ||
    isLoomError(error, ReasoningErrorCode.MODEL_TIMEOUT)
  );
}
