import type { EventStore } from '../event-store.js';
import type { LeaseStore } from '../lease-store.js';
import type { KernelRuntimeOptions } from '../runtime/runtime.js';
import type { SnapshotStore } from '../snapshot-store.js';
import type { ManualClock } from './manual-clock.js';

/** What a backend hands the runtime suite for one test. */
export interface RuntimeHarness {
  store: EventStore;
  leases: LeaseStore;
  snapshots: SnapshotStore;
  /** Shared by every store handle, so tests move time by hand. */
  clock: ManualClock;
  /** Rows actually stored for an execution, counted behind the store's back. */
  countRows(executionId: string): Promise<number>;
  /**
   * Default true: `snapshots.loadWithTail` reads a snapshot and the event tail after it in one
   * call through `store`. False when `store` is a decorator that rewrites what reads return
   * (`@loom/plugin-crypto`, `@loom/plugin-content`): the snapshot store declines it (reading
   * the tables itself would skip the decorator), and the tests of the combined read check the
   * two-call path (the snapshot, then the tail) instead.
   */
  snapshotsPaired?: boolean;
  /**
   * Options every runtime the suite makes starts from (a test's own options win): to run the
   * whole suite under a configuration, e.g. `{ groupCommit: false }`.
   */
  runtimeOptions?: Partial<KernelRuntimeOptions>;
  close(): Promise<void>;
}
