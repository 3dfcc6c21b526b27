import type { EventStore } from '../event-store.js';
import type { Snapshot, SnapshotStore, SnapshotWithTail } from '../snapshot-store.js';

/** Calls made through a {@link CountingSnapshotStore}. */
export interface SnapshotCallCounts {
  saves: number;
  loads: number;
  /** Combined snapshot-and-events reads that the inner store answered (one round trip each). */
  loadsWithTail: number;
}

/**
 * Wraps a snapshot store and counts its calls. `loadWithTail` answers undefined when the inner
 * store has none; `viewOf` maps a counting view of an event store (a `CountingEventStore`) back to
 * the store it wraps, so the inner store can recognise its own table. Test-only.
 */
export class CountingSnapshotStore implements SnapshotStore {
  readonly counts: SnapshotCallCounts = { saves: 0, loads: 0, loadsWithTail: 0 };

  constructor(
    private readonly inner: SnapshotStore,
    private readonly viewOf: (events: EventStore) => EventStore = (events) => events,
  ) {}

  /** Forwards to the inner store's `loadWithTail` (undefined when it has none or declines). */
  async loadWithTail(
    events: EventStore,
    executionId: string,
    limit: number,
  ): Promise<SnapshotWithTail | undefined> {
    const answer = await this.inner.loadWithTail?.(this.viewOf(events), executionId, limit);
    if (answer !== undefined) this.counts.loadsWithTail += 1;
    return answer;
  }

  save(snapshot: Snapshot): Promise<void> {
    this.counts.saves += 1;
    return this.inner.save(snapshot);
  }

  load(executionId: string): Promise<Snapshot | undefined> {
    this.counts.loads += 1;
    return this.inner.load(executionId);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
