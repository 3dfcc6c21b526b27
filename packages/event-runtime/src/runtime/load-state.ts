import type { StoredEvent } from '../envelope.js';
import type { EventStore } from '../event-store.js';
import { Limits } from '../limits.js';
import type { SnapshotStore } from '../snapshot-store.js';
import { type ExecutionState, foldEvent } from './core/execution-state.js';

/** An execution's state as loaded, and what the load cost. */
export interface LoadedState {
  state: ExecutionState | undefined;
  /** Sequence of the snapshot the load started from, if any. */
  snapshotSequence: number | undefined;
  /**
   * Store calls issued: one per call to the event or snapshot store (a combined
   * `loadWithTail` is one). A short execution on a paired store costs 1.
   */
  reads: number;
  /** Events read and folded after the snapshot. */
  eventsRead: number;
}

/**
 * Loads an execution's state: the newest snapshot, then only the events after it.
 *
 * When the snapshot store can read the event store's table itself
 * (`loadWithTail`: the SQLite snapshot store on the event store's database, the Postgres one on
 * its pool and schema, the memory one beside a memory event store), snapshot and first page of
 * events come back in ONE call, so a short execution (no snapshot yet) and a long one with a
 * snapshot near its tip both cost one round trip. Otherwise the snapshot is loaded first and
 * the events after it read next (two calls). Either way the state equals a fold of the whole log.
 */
export async function loadState(
  store: EventStore,
  snapshots: SnapshotStore | undefined,
  executionId: string,
): Promise<LoadedState> {
  let reads = 0;
  let state: ExecutionState | undefined;
  let snapshotSequence: number | undefined;
  let firstPage: StoredEvent[] | undefined;
  if (snapshots !== undefined) {
    reads += 1;
    const combined = await snapshots.loadWithTail?.(store, executionId, Limits.readLimitMax);
    // undefined: not paired (decided locally, no round trip); load the snapshot alone.
    const snapshot = combined === undefined ? await snapshots.load(executionId) : combined.snapshot;
    firstPage = combined?.events;
    if (snapshot !== undefined) {
      state = snapshot.state as unknown as ExecutionState;
      snapshotSequence = snapshot.sequence;
    }
  }
  let eventsRead = 0;
  let from = snapshotSequence === undefined ? 0 : snapshotSequence + 1;
  for (;;) {
    let page = firstPage;
    firstPage = undefined;
    if (page === undefined) {
      reads += 1;
      page = await store.read(executionId, { fromSequence: from, limit: Limits.readLimitMax });
    }
    for (const event of page) state = foldEvent(state, event);
    eventsRead += page.length;
    from += page.length;
    if (page.length < Limits.readLimitMax) break;
  }
  return { state, snapshotSequence, reads, eventsRead };
}
