import { ErrorCode, LoomError } from '../../errors.js';
import type { EventStore } from '../../event-store.js';
import { decodePayload } from '../../internal/json-codec.js';
import { checkExecutionId } from '../../internal/prepare-append.js';
import { type PreparedSnapshot, prepareSnapshot } from '../../internal/prepare-snapshot.js';
import { readOptions } from '../../internal/read-options.js';
import { readTarget } from '../../internal/read-target.js';
import type { Snapshot, SnapshotStore, SnapshotWithTail } from '../../snapshot-store.js';
import { InMemoryEventStore } from './in-memory-event-store.js';

/**
 * The newest snapshot per execution, in process memory: for tests, simulation and single-process
 * runtimes. Same contract as the durable backends (one conformance suite). State is kept as its
 * stored JSON text, so mutating a saved or loaded state never changes the store.
 *
 * Error codes: `INVALID_ENVELOPE` / `LIMIT_EXCEEDED` (bad id, sequence or `at`; state over
 * `snapshotBytesMax` or `payloadDepthMax`), `PAYLOAD_NOT_JSON`, `STORE_CLOSED`.
 *
 * @example
 * const snapshots = new InMemorySnapshotStore();
 * await snapshots.save({ executionId: 'order-1', sequence: 40, state: { paid: true }, at: Date.now() });
 * const newest = await snapshots.load('order-1'); // { executionId: 'order-1', sequence: 40, … }
 */
export class InMemorySnapshotStore implements SnapshotStore {
  readonly backend = 'memory';
  private readonly snapshots = new Map<string, PreparedSnapshot>();
  private closed = false;

  /**
   * Stores `snapshot` unless one at the same or a later sequence is already stored.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `PAYLOAD_NOT_JSON`, `STORE_CLOSED`.
   */
  async save(snapshot: Snapshot): Promise<void> {
    this.assertOpen();
    const prepared = prepareSnapshot(snapshot);
    const stored = this.snapshots.get(prepared.executionId);
    if (stored === undefined || prepared.sequence > stored.sequence) {
      this.snapshots.set(prepared.executionId, prepared);
    }
  }

  /**
   * The newest snapshot of `executionId` (state decoded afresh on every call), or undefined.
   * Throws `INVALID_ENVELOPE`, `LIMIT_EXCEEDED`, `STORE_CLOSED`.
   */
  async load(executionId: string): Promise<Snapshot | undefined> {
    return this.loadNow(executionId);
  }

  /** Drops the snapshots of pruned executions. Throws `INVALID_ENVELOPE`, `STORE_CLOSED`. */
  async forget(executionIds: readonly string[]): Promise<void> {
    this.assertOpen();
    for (const executionId of executionIds) this.snapshots.delete(checkExecutionId(executionId));
  }

  private loadNow(executionId: string): Snapshot | undefined {
    this.assertOpen();
    const stored = this.snapshots.get(checkExecutionId(executionId));
    if (stored === undefined) return undefined;
    return {
      executionId: stored.executionId,
      sequence: stored.sequence,
      state: decodePayload(stored.stateText),
      at: stored.at,
    };
  }

  /**
   * The newest snapshot and up to `limit` events after it, in one call, when `events` is an
   * {@link InMemoryEventStore} (undefined for any other store: load and read separately).
   * Throws `INVALID_ARGUMENT` for a `limit` outside 1..readLimitMax, and what `load` and
   * `events.read` throw.
   */
  async loadWithTail(
    events: EventStore,
    executionId: string,
    limit: number,
  ): Promise<SnapshotWithTail | undefined> {
    readOptions({ limit });
    const target = readTarget(events);
    if (!(target instanceof InMemoryEventStore)) return undefined;
    const snapshot = this.loadNow(executionId);
    const fromSequence = snapshot === undefined ? 0 : snapshot.sequence + 1;
    return { snapshot, events: await target.read(executionId, { fromSequence, limit }) };
  }

  /** Further calls fail with `STORE_CLOSED`. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new LoomError(ErrorCode.STORE_CLOSED, 'the memory snapshot store is closed', {
        backend: this.backend,
      });
    }
  }
}
