import type { StoredEvent } from '../envelope.js';
import { chainEvents, type PreparedAppend } from './prepare-append.js';
import { alreadyStarted, fenceStale, sequenceConflict } from './store-errors.js';

/** The last stored event of an execution: what an append must follow. */
export interface AppendTail {
  sequence: number;
  hash: string;
}

/** How a backend that checks appends in code (not in SQL) looks at an execution. */
export interface AppendLookups {
  /** The execution's current fence epoch (0 when never advanced); read only for a fenced append. */
  epoch(): number;
  /** The execution's last stored event, or undefined when it has none. */
  tail(): AppendTail | undefined;
}

/**
 * Decides whether a prepared append may be written where the log stands, and chains its hashes:
 * the fence first (a zombie learns it was fenced, not merely that it raced), then the sequence.
 * Call it inside whatever makes the check and the write atomic (a transaction, a lock, a
 * synchronous section). Returns the events as stored, `position` still 0 for the backend to set.
 *
 * Throws `FENCE_STALE`, `EXECUTION_ALREADY_STARTED` (sequence 0 of an existing execution) or
 * `SEQUENCE_CONFLICT` (not the next sequence).
 */
export function admitAppend(prepared: PreparedAppend, lookups: AppendLookups): StoredEvent[] {
  const { executionId, firstSequence, fenceEpoch } = prepared;
  if (fenceEpoch !== undefined) {
    const current = lookups.epoch();
    if (current !== fenceEpoch) throw fenceStale(executionId, current, fenceEpoch);
  }
  const tail = lookups.tail();
  const next = tail === undefined ? 0 : tail.sequence + 1;
  if (firstSequence !== next) {
    if (firstSequence === 0) throw alreadyStarted(executionId);
    throw sequenceConflict(executionId, next, firstSequence);
  }
  return chainEvents(prepared, tail?.hash ?? null);
}
