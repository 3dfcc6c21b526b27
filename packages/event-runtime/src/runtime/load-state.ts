import type { EventStore } from '../event-store.js';
import { Limits } from '../limits.js';
import type { SnapshotStore } from '../snapshot-store.js';
import { type ExecutionState, foldEvent } from './execution-state.js';

/** An execution's state as loaded, and what the load cost. */
export interface LoadedState {
  state: ExecutionState | undefined;
  /** Sequence of the snapshot the load started from, if any. */
  snapshotSequence: number | undefined;
  /** Store reads issued (snapshot load included). */
  reads: number;
  /** Events read and folded after the snapshot. */
  eventsRead: number;
}

/**
 * Loads an execution's state: the newest snapshot first, then only the events after it.
 * A 1,000-event execution with a snapshot at its tip costs one snapshot read and one event read.
 */
export async function loadState(
  store: EventStore,
  snapshots: SnapshotStore | undefined,
  executionId: string,
): Promise<LoadedState> {
  let reads = 0;
  let state: ExecutionState | undefined;
  let snapshotSequence: number | undefined;
  if (snapshots !== undefined) {
    reads += 1;
    const snapshot = await snapshots.load(executionId);
    if (snapshot !== undefined) {
      state = snapshot.state as unknown as ExecutionState;
      snapshotSequence = snapshot.sequence;
    }
  }
  let eventsRead = 0;
  let from = snapshotSequence === undefined ? 0 : snapshotSequence + 1;
  for (;;) {
    reads += 1;
    const page = await store.read(executionId, { fromSequence: from, limit: Limits.readLimitMax });
    for (const event of page) state = foldEvent(state, event);
    eventsRead += page.length;
    from += page.length;
    if (page.length < Limits.readLimitMax) break;
  }
  return { state, snapshotSequence, reads, eventsRead };
}
