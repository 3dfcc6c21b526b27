import type { ClaimDueOptions, FlowKey } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import { checkExecutionId } from './check-execution-id.js';
import { checkLeaseOwner } from './lease-input.js';

/**
 * Checks `claimDue`'s arguments before they reach a `bigint` parameter (where a fraction or a
 * negative LIMIT would be an opaque `STORE_FAILURE`). `limit` is bounded like every read: one
 * claim is one statement and one transaction holding its row locks. Throws `INVALID_ARGUMENT`.
 */
export function checkClaimDue(nowMs: number, limit: number): void;
/**
 * The same checks, `options.claimedBy` (see {@link claimedByOf}) and `options.flows` (at most
 * `Limits.claimFlowsMax` name/version pairs of strings, version null for an unversioned flow);
 * returns the flows to filter by, or undefined for every due execution. Throws
 * `INVALID_ARGUMENT`.
 */
export function checkClaimDue(
  nowMs: number,
  limit: number,
  options: ClaimDueOptions | undefined,
): readonly FlowKey[] | undefined;
export function checkClaimDue(
  nowMs: number,
  limit: number,
  options?: ClaimDueOptions,
): readonly FlowKey[] | undefined {
  checkNowMs(nowMs, 'claimDue');
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
  claimedByOf(options);
  return claimFlows(options?.flows);
}

/**
 * Checks a claim's flow filter (`claimDue`'s and a queue claim's `flows`): at most
 * `Limits.claimFlowsMax` `{ name, version }` pairs. `path` names the option in the error.
 * Throws `INVALID_ARGUMENT`.
 */
export function claimFlows(
  flows: readonly FlowKey[] | undefined,
  operation = 'claimDue',
): readonly FlowKey[] | undefined {
  if (flows === undefined) return undefined;
  if (!Array.isArray(flows) || flows.length > Limits.claimFlowsMax) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `${operation}'s options.flows must be an array of at most claimFlowsMax (${Limits.claimFlowsMax}) ` +
        'flows',
      { path: 'options.flows', limit: 'claimFlowsMax' },
    );
  }
  for (const [index, flow] of flows.entries()) {
    const named = typeof flow === 'object' && flow !== null && typeof flow.name === 'string';
    if (!named || (flow.version !== null && typeof flow.version !== 'string')) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `${operation}'s options.flows[${index}] must be { name: string, version: string | null }`,
        { path: `options.flows[${index}]` },
      );
    }
  }
  return flows;
}

/**
 * Checks `claimDue`'s `options.claimedBy` (a node id, as a lease owner) and returns it, or null
 * when omitted. Throws `INVALID_ARGUMENT`.
 */
export function claimedByOf(options: ClaimDueOptions | undefined): string | null {
  const claimedBy = options?.claimedBy;
  return claimedBy === undefined ? null : checkLeaseOwner(claimedBy, 'options.claimedBy');
}

/**
 * Checks `unclaimDue`'s arguments: at most `Limits.readLimitMax` execution ids (as many as one
 * claim returns), each a valid id, and `nowMs` as `claimDue`'s. Returns the ids without
 * repeats. Throws `INVALID_ARGUMENT`, and what `checkExecutionId` throws for a bad id.
 */
export function checkUnclaimDue(executionIds: readonly string[], nowMs: number): string[] {
  if (!Array.isArray(executionIds) || executionIds.length > Limits.readLimitMax) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `unclaimDue's executionIds must be an array of at most readLimitMax (${Limits.readLimitMax}) ` +
        'ids: give back what one claimDue returned',
      { path: 'executionIds', limit: 'readLimitMax' },
    );
  }
  checkNowMs(nowMs, 'unclaimDue');
  return [...new Set(executionIds.map(checkExecutionId))];
}

function checkNowMs(nowMs: number, operation: string): void {
  if (typeof nowMs !== 'number' || !Number.isSafeInteger(nowMs) || nowMs < 0) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `${operation}'s nowMs must be a non-negative integer (epoch ms), got ${String(nowMs)}`,
      { path: 'nowMs', actual: nowMs },
    );
  }
}
