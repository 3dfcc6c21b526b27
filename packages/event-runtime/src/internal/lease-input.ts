import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import { checkExecutionId } from './prepare-append.js';
import { checkWellFormed } from './well-formed-text.js';

/**
 * Characters of a lease owner (a runtime's `nodeId`). Kept beside the check rather than in
 * `Limits` because a bad owner is `INVALID_ARGUMENT` (the `LeaseStore` contract), not
 * `LIMIT_EXCEEDED`.
 */
const ownerLengthMax = 200;

function argument(message: string, fields: Record<string, unknown>): never {
  throw new LoomError(ErrorCode.INVALID_ARGUMENT, message, fields);
}

/**
 * Validates a lease owner: a non-empty string of at most 200 characters, without a lone
 * surrogate or NUL. `path` names it in the error (`owner`, or the runtime's `nodeId`). Throws
 * `INVALID_ARGUMENT`.
 */
export function checkLeaseOwner(owner: unknown, path = 'owner'): string {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > ownerLengthMax) {
    const got = typeof owner === 'string' ? `${owner.length} characters` : typeof owner;
    argument(
      `a lease owner (${path}) must be a non-empty string of at most ${ownerLengthMax} ` +
        `characters (the runtime's nodeId), got ${got}`,
      { path, actual: got },
    );
  }
  return checkWellFormed(owner, path, ErrorCode.INVALID_ARGUMENT);
}

/**
 * Validates a ttl and returns the expiry it gives at `nowMs`. Both must be safe integers, so an
 * expiry read back from any backend is exactly the one written.
 */
export function leaseExpiry(ttlMs: unknown, nowMs: number): number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs <= 0) {
    argument(`ttlMs must be a positive integer of milliseconds, got ${String(ttlMs)}`, {
      path: 'ttlMs',
      actual: ttlMs,
    });
  }
  const expiresAtMs = nowMs + ttlMs;
  if (!Number.isSafeInteger(expiresAtMs)) {
    argument(`ttlMs ${ttlMs} puts the expiry past the largest safe integer: use a shorter ttl`, {
      path: 'ttlMs',
      actual: ttlMs,
    });
  }
  return expiresAtMs;
}

/**
 * Validates a batch of execution ids and returns them without duplicates, in first-seen order.
 * Throws `INVALID_ARGUMENT` when it is not an array, `LIMIT_EXCEEDED` past `leaseBatchMax`, and
 * what `checkExecutionId` throws for a bad id. Checks everything before the caller writes.
 */
export function checkLeaseBatch(executionIds: unknown, operation: string): string[] {
  if (!Array.isArray(executionIds)) {
    argument(`${operation} needs an array of execution ids, got ${typeof executionIds}`, {
      path: 'executionIds',
      operation,
    });
  }
  if (executionIds.length > Limits.leaseBatchMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `${operation} got ${executionIds.length} execution ids, over leaseBatchMax ` +
        `(${Limits.leaseBatchMax}): split the batch`,
      { limit: 'leaseBatchMax', actual: executionIds.length, operation },
    );
  }
  const unique = new Set<string>();
  for (const executionId of executionIds) unique.add(checkExecutionId(executionId));
  return [...unique];
}
