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
    (due === undefined ||
      (entry.status === 'suspended' && entry.wakeAtMs !== null && entry.wakeAtMs <= due))
  );
}

/**
 * The index entry after an append's update, like the SQL upsert: what the start recorded (flow,
 * version, creation time) is kept, the rest is replaced. One exception, the signal mark: a signal
 * sent while the execution runs sets its wake time to the send (`sendSignal`); the suspension
 * that follows keeps the earlier of that mark and its own wake, so an execution suspending with
 * a signal it may not have seen is due at once, even if its process dies before it looks.
 */
export function mergeIndexUpdate(
  existing: IndexUpdate | undefined,
  update: IndexUpdate,
): IndexUpdate {
  if (existing === undefined) return { ...update };
  return {
    ...update,
    wakeAtMs: suspensionWake(existing, update),
    flow: existing.flow,
    version: existing.version,
    createdAtMs: existing.createdAtMs,
  };
}

/** The wake time an update leaves: a suspension keeps a signal's mark made while it ran. */
export function suspensionWake(existing: IndexUpdate, update: IndexUpdate): number | null {
  const mark = existing.status === 'running' ? existing.wakeAtMs : null;
  if (update.status !== 'suspended' || mark === null) return update.wakeAtMs;
  return update.wakeAtMs === null ? mark : Math.min(mark, update.wakeAtMs);
}

/**
 * What a signal sent at `atMs` does to its execution's index entry: a suspended one becomes due
 * now; a running one keeps the mark (its first) that its next suspension turns into a wake-up
 * (see {@link mergeIndexUpdate}). The SQL backends do the same in their send-signal statements.
 */
export function signalWake(entry: IndexUpdate | undefined, atMs: number): void {
  if (entry?.status === 'suspended') entry.wakeAtMs = atMs;
  else if (entry?.status === 'running') entry.wakeAtMs ??= atMs;
}
