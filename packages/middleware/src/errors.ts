import {
  isLoomError as isKernelLoomError,
  LoomError as KernelLoomError,
} from '@loom/event-runtime';

/**
 * Stable error codes of `@loom/middleware`. Callers match on `code`, never on `instanceof`
 * (two installed copies of the package break `instanceof`). A code is never reused.
 */
export const ErrorCode = {
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
  /** The effect said the failure is final ({@link TerminalError}): retrying cannot help. */
  TERMINAL: 'TERMINAL',
} as const;

/** One of the stable error codes in {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Structured facts an error carries, so a caller never has to parse a message. */
export interface LoomErrorFields {
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
 * The one error type of Loom: the kernel's class with this package's codes. `code` is stable
 * and documented; `fields` carry the facts; `cause` the underlying error, if any.
 */
export class LoomError extends KernelLoomError<ErrorCode> {
  constructor(code: ErrorCode, message: string, fields: LoomErrorFields = {}, cause?: unknown) {
    super(code, message, fields, cause);
  }
}

/**
 * Thrown by an effect to say "this failure is final": `retryMiddleware` stops at once and
 * rethrows it unchanged. Its code is `TERMINAL`; match with `isTerminalError`, which works
 * across package copies.
 *
 * @example
 * if (response.status === 402) throw new TerminalError('card declined', { status: 402 });
 */
export class TerminalError extends LoomError {
  constructor(message: string, fields: LoomErrorFields = {}, cause?: unknown) {
    super(ErrorCode.TERMINAL, message, fields, cause);
  }
}

/** True when `error` is a {@link LoomError} with the given code (works across package copies). */
export function isLoomError(error: unknown, code?: ErrorCode): error is LoomError {
  return isKernelLoomError(error, code);
}

/** True when `error` is a {@link TerminalError} (code `TERMINAL`), from any package copy. */
export function isTerminalError(error: unknown): error is TerminalError {
  return isLoomError(error, ErrorCode.TERMINAL);
}
