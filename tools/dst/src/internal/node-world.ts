import type {
  InMemoryEventStore,
  InMemoryLeaseStore,
  InMemoryQueueStore,
} from '@loom/event-runtime';
import type { ManualClock } from '@loom/event-runtime/testing';
import type { Faults } from '../faults.js';
import type { NodeClock } from '../node-clock.js';
import type { SeededRandom } from '../seeded-random.js';
import type { Recorder } from './recorder.js';

/**
 * What a `SimNode` uses of the world it runs in (`SimWorld` is the one there is). It lives in its
 * own file so that the node, the world and the client do not import each other.
 */
export interface NodeWorld {
  /** The shared virtual clock: it owns every timer. */
  readonly clock: ManualClock;
  /** The stores every node shares. */
  readonly stores: {
    readonly events: InMemoryEventStore;
    readonly leases: InMemoryLeaseStore;
    readonly queues: InMemoryQueueStore;
  };
  readonly recorder: Recorder;
  readonly random: SeededRandom;
  readonly faults: Faults;
  /** True once the faults have ended. */
  readonly healed: boolean;
  /** The world's client: it calls a node's process again until the call succeeds or it dies. */
  readonly client: {
    retryOn(what: string, clock: NodeClock, call: () => Promise<void>): Promise<void>;
  };
  /** A background failure a node's runtime reported. */
  backgroundError(nodeId: string, error: unknown): void;
}
