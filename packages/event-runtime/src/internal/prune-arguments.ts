import type { PruneOptions } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import { checkExecutionId } from './check-execution-id.js';

/** `prune`'s options, checked, with the default limit and the ids without repeats. */
export interface PruneArguments {
  endedBeforeMs: number;
  /** Undefined: any settled execution. */
  executionIds: string[] | undefined;
  limit: number;
}

/**
 * Checks `prune`'s options before they reach a `bigint` parameter: `endedBeforeMs` a
 * non-negative integer (epoch ms), `limit` an integer from 1 to `Limits.readLimitMax` (a prune
 * is a bounded batch: call again for more), `executionIds` an array of at most
 * `Limits.readLimitMax` valid ids. Throws `INVALID_ARGUMENT`, and what `checkExecutionId` throws
 * for a bad id (`INVALID_ENVELOPE`, `LIMIT_EXCEEDED`).
 */
export function checkPrune(options: PruneOptions): PruneArguments {
  if (typeof options !== 'object' || options === null) {
    throw invalid('options', options, 'prune takes { endedBeforeMs, executionIds?, limit? }');
  }
  const { endedBeforeMs, executionIds, limit = Limits.readLimitMax } = options;
  if (
    typeof endedBeforeMs !== 'number' ||
    !Number.isSafeInteger(endedBeforeMs) ||
    endedBeforeMs < 0
  ) {
    throw invalid(
      'endedBeforeMs',
      endedBeforeMs,
      `prune's endedBeforeMs must be a non-negative integer (epoch ms), got ${String(endedBeforeMs)}`,
    );
  }
  if (
    typeof limit !== 'number' ||
    !Number.isSafeInteger(limit) ||
    limit < 1 ||
    limit > Limits.readLimitMax
  ) {
    throw invalid(
      'limit',
      limit,
      `prune's limit must be an integer from 1 to readLimitMax (${Limits.readLimitMax}), ` +
        `got ${String(limit)}: prune in batches`,
    );
  }
  if (executionIds === undefined) return { endedBeforeMs, executionIds: undefined, limit };
  if (!Array.isArray(executionIds) || executionIds.length > Limits.readLimitMax) {
    throw invalid(
      'executionIds',
      undefined,
      `prune's executionIds must be an array of at most readLimitMax (${Limits.readLimitMax}) ids`,
    );
  }
  return { endedBeforeMs, executionIds: [...new Set(executionIds.map(checkExecutionId))], limit };
}

function invalid(path: string, actual: unknown, message: string): LoomError {
  return new LoomError(ErrorCode.INVALID_ARGUMENT, message, { path, actual });
}
