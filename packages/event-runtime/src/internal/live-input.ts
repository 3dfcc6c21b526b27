import { ErrorCode, LoomError } from '../errors.js';
import {
  type LiveChunkInput,
  type LiveReadOptions,
  liveChunkTextMax,
  liveNameLengthMax,
  liveReadLimitMax,
} from '../live-store.js';
import { checkExecutionId } from './check-execution-id.js';
import { checkWellFormed } from './well-formed-text.js';

/** Validates a stream name or an attempt id (throws `INVALID_ARGUMENT`). */
export function checkLiveName(value: unknown, what: 'stream' | 'attempt'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > liveNameLengthMax) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `a live chunk's ${what} must be a string of 1 to ${liveNameLengthMax} characters, got ${typeof value === 'string' ? `${value.length} characters` : typeof value}`,
      { path: what },
    );
  }
  return checkWellFormed(value, what, ErrorCode.INVALID_ARGUMENT);
}

/**
 * Validates what `LiveStore.write` takes and returns a plain copy. Throws `INVALID_ENVELOPE` /
 * `LIMIT_EXCEEDED` (execution id), `INVALID_ARGUMENT` (names, offset, empty text),
 * `LIMIT_EXCEEDED` (text over liveChunkTextMax).
 */
export function checkLiveChunk(chunk: LiveChunkInput): LiveChunkInput {
  const executionId = checkExecutionId(chunk?.executionId);
  const stream = checkLiveName(chunk.stream, 'stream');
  const attempt = checkLiveName(chunk.attempt, 'attempt');
  const { offset, text } = chunk;
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `a live chunk's offset must be a non-negative integer, got ${String(offset)}`,
      { path: 'offset' },
    );
  }
  if (typeof text !== 'string' || text.length === 0) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      "a live chunk's text must be a non-empty string",
      {
        path: 'text',
      },
    );
  }
  if (text.length > liveChunkTextMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `a live chunk's text is ${text.length} code units, over liveChunkTextMax (${liveChunkTextMax}): split it`,
      { limit: 'liveChunkTextMax', actual: text.length },
    );
  }
  return {
    executionId,
    stream,
    attempt,
    offset,
    text: checkWellFormed(text, 'text', ErrorCode.INVALID_ARGUMENT),
  };
}

/** Validates `LiveStore.read`'s options (throws `INVALID_ARGUMENT`). */
export function liveReadOptions(options: LiveReadOptions = {}): {
  afterPosition: number;
  limit: number;
} {
  const afterPosition = options.afterPosition ?? 0;
  const limit = options.limit ?? liveReadLimitMax;
  if (!Number.isSafeInteger(afterPosition) || afterPosition < 0) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `afterPosition must be a non-negative integer, got ${String(afterPosition)}`,
      { path: 'afterPosition' },
    );
  }
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > liveReadLimitMax) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `limit must be an integer between 1 and ${liveReadLimitMax}, got ${String(limit)}`,
      { path: 'limit' },
    );
  }
  return { afterPosition, limit };
}

/** Validates `LiveStore.prune`'s bound (throws `INVALID_ARGUMENT`). */
export function checkPruneBound(beforeMs: unknown): number {
  if (typeof beforeMs !== 'number' || !Number.isSafeInteger(beforeMs)) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `prune takes a time in ms since the epoch, got ${String(beforeMs)}`,
      { path: 'beforeMs' },
    );
  }
  return beforeMs;
}
