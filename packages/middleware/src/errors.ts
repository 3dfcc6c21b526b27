import { isLoomError, LoomError, type LoomErrorFields } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same
 * class, not a copy): this package's errors are `LoomError`s with the codes below.
 */
export { isLoomError, LoomError };

/**
 * Stable error codes of `@loom/middleware`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused; every
 * package's codes are listed in docs/errors.md.
 */
export const MiddlewareErrorCode = {
  /** An option is missing, of the wrong type, out of range or unknown; `fields.option` names it. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** An attempt ran past `timeoutMs`; its signal was aborted with this error as the reason. */
  TIMEOUT: 'TIMEOUT',
  /** The circuit breaker is open (or half-open with every probe slot taken): not called. */
  CIRCUIT_OPEN: 'CIRCUIT_OPEN',
  /** No token was free and the rate limiter rejects (or its wait queue is full). */
  RATE_LIMITED: 'RATE_LIMITED',
  /** Every allowed attempt failed; `fields.attempts` says how many, `cause` is the last error. */
  RETRIES_EXHAUSTED: 'RETRIES_EXHAUSTED',
  /** The effect said the failure is final ({@link terminalError}): retrying cannot help. */
  TERMINAL: 'TERMINAL',
} as const;

/** One of the stable error codes in {@link MiddlewareErrorCode}. */
export type MiddlewareErrorCode = (typeof MiddlewareErrorCode)[keyof typeof MiddlewareErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface MiddlewareErrorFields extends LoomErrorFields {
  executionId?: string;
  stepIndex?: number;
  stepName?: string;
  attempt?: number;
  option?: string;
  expected?: unknown;
  actual?: unknown;
  [key: string]: unknown;
}

/**
 * The error an effect throws to say "this failure is final": `retryMiddleware` stops at once and
 * rethrows it unchanged. A plain {@link LoomError} with code `TERMINAL`; match it with
 * {@link isTerminalError}, which works across package copies.
 *
 * @example
 * if (response.status === 402) throw terminalError('card declined', { status: 402 });
 */
export function terminalError(
  message: string,
  fields: MiddlewareErrorFields = {},
  cause?: unknown,
): LoomError<typeof MiddlewareErrorCode.TERMINAL> {
  return new LoomError(MiddlewareErrorCode.TERMINAL, message, fields, cause);
}

/** The signature of {@link TerminalError}: callable with or without `new`. */
export interface TerminalErrorConstructor {
  new (
    message: string,
    fields?: MiddlewareErrorFields,
    cause?: unknown,
  ): LoomError<typeof MiddlewareErrorCode.TERMINAL>;
  (
    message: string,
    fields?: MiddlewareErrorFields,
    cause?: unknown,
  ): LoomError<typeof MiddlewareErrorCode.TERMINAL>;
}

/**
 * @deprecated Was a subclass of `LoomError`; Loom has one error class now. Use
 * {@link terminalError}. `new TerminalError(message)` still works for one release and returns
 * exactly what `terminalError(message)` returns (a `LoomError` with code `TERMINAL`), so
 * `instanceof TerminalError` is false: match with {@link isTerminalError}.
 */
export const TerminalError = function TerminalError(
  message: string,
  fields?: MiddlewareErrorFields,
  cause?: unknown,
) {
  return terminalError(message, fields, cause);
} as unknown as TerminalErrorConstructor;

/** True when `error` is a `LoomError` with code `TERMINAL` ({@link terminalError}), from any package copy. */
export function isTerminalError(
  error: unknown,
): error is LoomError<typeof MiddlewareErrorCode.TERMINAL> {
  return isLoomError(error, MiddlewareErrorCode.TERMINAL);
}
