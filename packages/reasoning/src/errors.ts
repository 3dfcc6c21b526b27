import {
  isLoomError as isKernelLoomError,
  LoomError as KernelLoomError,
} from '@loom/event-runtime';

/**
 * Stable error codes of `@loom/reasoning`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused.
 */
export const ErrorCode = {
  /**
   * The provider said "too many requests" (HTTP 429). `fields.retryAfterMs` is the wait it asked
   * for (from `retry-after-ms` or `retry-after`), or absent. Retryable; the router falls back.
   */
  MODEL_RATE_LIMITED: 'MODEL_RATE_LIMITED',
  /**
   * The provider could not serve: HTTP 5xx (`fields.status`), 408/409, or no connection (refused,
   * reset, DNS). Retryable; the router falls back.
   */
  MODEL_UNAVAILABLE: 'MODEL_UNAVAILABLE',
  /**
   * The provider answered something that is not its API's format: malformed JSON, a body that
   * fails the provider's schema, or a stream cut off before its end. Not retried by default.
   */
  MODEL_BAD_RESPONSE: 'MODEL_BAD_RESPONSE',
  /** No answer (or, streaming, no first delta) within `timeoutMs` (`fields.timeoutMs`). Retryable. */
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

/** One of the stable error codes in {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface LoomErrorFields {
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
 * The one error type of Loom: the kernel's class with this package's codes. `code` is stable
 * and documented; `fields` carry the facts; `cause` the underlying error (the AI SDK's), if any.
 */
export class LoomError extends KernelLoomError<ErrorCode> {
  constructor(code: ErrorCode, message: string, fields: LoomErrorFields = {}, cause?: unknown) {
    super(code, message, fields, cause);
  }
}

/** True when `error` is a {@link LoomError} with the given code (works across package copies). */
export function isLoomError(error: unknown, code?: ErrorCode): error is LoomError {
  return isKernelLoomError(error, code);
}

/**
 * True for the failures worth another attempt or another route: `MODEL_RATE_LIMITED`,
 * `MODEL_UNAVAILABLE`, `MODEL_TIMEOUT`.
 */
export function isRetryableModelError(error: unknown): boolean {
  return (
    isLoomError(error, ErrorCode.MODEL_RATE_LIMITED) ||
    isLoomError(error, ErrorCode.MODEL_UNAVAILABLE) ||
    isLoomError(error, ErrorCode.MODEL_TIMEOUT)
  );
}
