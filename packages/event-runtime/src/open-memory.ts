import type { Backend } from './backend.js';
import type { Clock } from './clock.js';
import { InMemoryEventStore } from './store/memory/in-memory-event-store.js';
import { InMemoryLeaseStore } from './store/memory/in-memory-lease-store.js';
import { InMemoryLiveStore } from './store/memory/in-memory-live-store.js';
import { InMemoryQueueStore } from './store/memory/in-memory-queue-store.js';
import { InMemorySnapshotStore } from './store/memory/in-memory-snapshot-store.js';

/** Options of {@link openMemory}. */
export interface OpenMemoryOptions {
  /** Stamps events and judges lease and claim expiry. Default: the wall clock. */
  clock?: Clock;
}

/** The memory {@link Backend}: each store is the in-memory one. */
export interface MemoryBackend extends Backend {
  readonly kind: 'memory';
  readonly events: InMemoryEventStore;
  readonly leases: InMemoryLeaseStore;
  readonly snapshots: InMemorySnapshotStore;
  readonly queues: InMemoryQueueStore;
  readonly live: InMemoryLiveStore;
}

/**
 * Opens a backend in process memory: for tests, examples and single-process tools. Nothing
 * survives the process. `migrate()` does nothing; `close()` closes every store (they then refuse
 * calls with `STORE_CLOSED`).
 *
 * @example
 * import { openMemory } from '@loom/event-runtime';
 * const backend = openMemory();
 * // createRuntime({ backend, flows: [order] }) in @loom/workflow-runtime
 * await backend.close();
 */
export function openMemory(options: OpenMemoryOptions = {}): MemoryBackend {
  const clock = options.clock === undefined ? {} : { clock: options.clock };
  const events = new InMemoryEventStore(clock);
  const leases = new InMemoryLeaseStore(clock);
  const snapshots = new InMemorySnapshotStore();
  const queues = new InMemoryQueueStore(clock);
  const live = new InMemoryLiveStore(clock);
  let closing: Promise<void> | undefined;
  return {
    kind: 'memory',
    events,
    leases,
    snapshots,
    queues,
    live,
    migrate: async () => undefined,
    close: () => {
      closing ??= (async () => {
        await live.close();
        await queues.close();
        await snapshots.close();
        await leases.close();
        await events.close();
      })();
      return closing;
    },
  };
}
