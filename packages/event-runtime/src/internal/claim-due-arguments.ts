import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';

/**
 * Checks `claimDue`'s arguments before they reach a `bigint` parameter (where a fraction or a
 * negative LIMIT would be an opaque `STORE_FAILURE`). `limit` is bounded like every read: one
 * claim is one statement and one transaction holding its row locks. Throws `INVALID_ARGUMENT`.
 */
export function checkClaimDue(nowMs: number, limit: number): void {
  if (typeof nowMs !== 'number' || !Number.isSafeInteger(nowMs) || nowMs < 0) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `claimDue's nowMs must be a non-negative integer (epoch ms), got ${String(nowMs)}`,
      { path: 'nowMs', actual: nowMs },
    );
  }
  if (
    typeof limit !== 'number' ||
    !Number.isSafeInteger(limit) ||
    limit < 1 ||
    limit > Limits.readLimitMax
  ) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `claimDue's limit must be an integer between 1 and readLimitMax (${Limits.readLimitMax}), ` +
        `got ${String(limit)}`,
      { path: 'limit', limit: 'readLimitMax', actual: limit },
    );
  }
}
