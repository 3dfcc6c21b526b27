import type { EventStore } from '../event-store.js';
import type { ManualClock } from './manual-clock.js';
import type { RuntimeHarness } from './runtime-harness.js';

/** What the durable harnesses take besides where the database is. */
export interface DurableHarnessOptions<S extends EventStore> {
  /**
   * Decorates the event store the runtime sees (a decorator under test); its `close` must close
   * the store it wraps. Default: the store itself.
   */
  wrap?: (store: S, clock: ManualClock) => EventStore | Promise<EventStore>;
  /**
   * False when the decorated store must not take the snapshot store's one-call read of a
   * snapshot and the log's tail (a decorator that rewrites payloads); see `RuntimeHarness`.
   * Default true.
   */
  snapshotsPaired?: boolean;
}

/** A runtime harness on a durable store, with the undecorated store for looks behind the decorator. */
export type DurableHarness<S extends EventStore> = RuntimeHarness & { inner: S };
