import { ErrorCode, LoomError } from '../errors.js';
import type { AppendRequest } from '../event-store.js';
import { type PreparedAppend, prepareAppend } from './prepare-append.js';

/**
 * Validates each request of an `appendBatch` on its own (a bad one fails alone, through `fail`)
 * and refuses a repeated execution with `INVALID_ARGUMENT`: a batch takes at most one append per
 * execution. Returns the prepared appends by request index, in request order.
 */
export function prepareBatch(
  requests: readonly AppendRequest[],
  nowMs: number,
  fail: (index: number, error: unknown) => void,
): Map<number, PreparedAppend> {
  const prepared = new Map<number, PreparedAppend>();
  const seen = new Set<string>();
  requests.forEach((request, index) => {
    try {
      const append = prepareAppend(request.envelopes, request.guard, nowMs);
      if (seen.has(append.executionId)) throw repeatedInBatch(append.executionId, index);
      seen.add(append.executionId);
      prepared.set(index, append);
    } catch (error) {
      fail(index, error);
    }
  });
  return prepared;
}

/** `INVALID_ARGUMENT` for request `index` of a batch that already holds an append of `executionId`. */
export function repeatedInBatch(executionId: string, index: number): LoomError {
  return new LoomError(
    ErrorCode.INVALID_ARGUMENT,
    `appendBatch got execution ${executionId} twice: a batch takes at most one append per ` +
      'execution (send the later one in the next batch)',
    { executionId, path: `requests[${index}]` },
  );
}
