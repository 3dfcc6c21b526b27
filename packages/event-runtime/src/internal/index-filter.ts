import type { IndexUpdate } from './prepare-append.js';
import type { FindExecutionsFilter } from './read-options.js';

/**
 * True when an execution index entry passes every filter given: the SQL backends' WHERE clause
 * (find-executions-query.ts), in code, for backends that filter in memory.
 */
export function matchesIndexFilter(entry: IndexUpdate, filter: FindExecutionsFilter): boolean {
  const due = filter.dueAtOrBeforeMs;
  return (
    (filter.status === undefined || entry.status === filter.status) &&
    (filter.settledAs === undefined || entry.settledAs === filter.settledAs) &&
    (filter.flow === undefined || entry.flow === filter.flow) &&
    (filter.version === undefined || entry.version === filter.version) &&
    (filter.createdFromMs === undefined || entry.createdAtMs >= filter.createdFromMs) &&
    (filter.createdBeforeMs === undefined || entry.createdAtMs < filter.createdBeforeMs) &&
    (filter.updatedFromMs === undefined || entry.updatedAtMs >= filter.updatedFromMs) &&
    (filter.updatedBeforeMs === undefined || entry.updatedAtMs < filter.updatedBeforeMs) &&
    (due === undefined || (entry.wakeAtMs !== null && entry.wakeAtMs <= due))
  );
}

/**
 * The index entry after an append's update, like the SQL upsert: what the start recorded (flow,
 * version, starting node, creation time) is kept, the rest is replaced.
 */
export function mergeIndexUpdate(
  existing: IndexUpdate | undefined,
  update: IndexUpdate,
): IndexUpdate {
  if (existing === undefined) return { ...update };
  return {
    ...update,
    flow: existing.flow,
    version: existing.version,
    startedBy: existing.startedBy,
    createdAtMs: existing.createdAtMs,
  };
}
