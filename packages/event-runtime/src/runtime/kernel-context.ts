import { hostname } from 'node:os';
import { type Clock, systemClock } from '../clock.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import { checkLeaseOwner } from '../internal/lease-input.js';
import { mintId } from '../internal/mint-id.js';
import type { LeaseStore } from '../lease-store.js';
import type { SnapshotStore } from '../snapshot-store.js';
import { ExecutionLinks } from './execution-links.js';
import { ExecutionRecovery } from './execution-recovery.js';
import { FlowRegistry } from './flow-registry.js';
import { GroupCommit } from './group-commit.js';
import { LeaseManager } from './lease-manager.js';
import { LocalExecutions } from './local-executions.js';
import { NodePresence } from './node-presence.js';
import { RuntimeEvents } from './runtime-events.js';
import {
  type KernelRuntimeOptions,
  type RuntimeSettings,
  resolveSettings,
} from './runtime-options.js';
import { SuspectLane } from './suspect-lane.js';

/**
 * Everything the kernel's pieces on one node share, handed to each of them as one object: where
 * the log and its neighbours live, the clock, the settings (defaults applied once), the flows it
 * can run, the leases it holds, and the pieces themselves, so one reaches another by name
 * (`context.executions.resume(id)`) instead of through closures its owner wired up.
 *
 * The pieces keep the context and read it only while they work, never while they are built:
 * that is what lets them refer to each other.
 */
export interface KernelContext {
  /** This node's name in leases. */
  readonly nodeId: string;
  readonly store: EventStore;
  readonly snapshots: SnapshotStore | undefined;
  /** The lease store, when the runtime has one (the raw store; `leases` batches over it). */
  readonly leaseStore: LeaseStore | undefined;
  /** The one source of time and timers of everything this node does. */
  readonly clock: Clock;
  readonly settings: RuntimeSettings;
  readonly flows: FlowRegistry;
  /** The leases this node holds; undefined when it takes none (no lease store, or mode 'off'). */
  readonly leases: LeaseManager | undefined;
  /** This node's claim on its id (with `leases`): how others tell at once that it died. */
  readonly presence: NodePresence | undefined;
  /** Sends the appends of every journal that flushed in one turn together (ADR 0040). */
  readonly commits: GroupCommit;
  /** The executions this node drives. */
  readonly executions: LocalExecutions;
  /** Parent, child and continue-as-new links between executions. */
  readonly links: ExecutionLinks;
  /** Timer wake-ups and recovery of executions nobody drives. */
  readonly recovery: ExecutionRecovery;
  /** What this node tells its observers (`runtime.events`). */
  readonly events: RuntimeEvents;
  /** The one lane interrupted steps run their effects in again, one at a time (ADR 0031). */
  readonly suspects: SuspectLane;
  /**
   * Executions a transient store failure stopped here, until their next driver starts: a step
   * that driver finds in flight was stopped by the store, not by a crash (ADR 0031).
   */
  readonly storeRetried: Set<string>;
  /** True once `shutdown()` began: no new work is taken on. */
  readonly shuttingDown: boolean;
  /**
   * Reports a background failure (lease renewals, snapshots, links) as a `store:error` event and
   * to the runtime's `onError`.
   */
  report(error: unknown): void;
  /** Throws `RUNTIME_SHUT_DOWN` once shutdown began. */
  assertRunning(): void;
}

/** The runtime's {@link KernelContext}: built once per runtime, its pieces built last. */
export class Kernel implements KernelContext {
  readonly nodeId: string;
  readonly store: EventStore;
  readonly snapshots: SnapshotStore | undefined;
  readonly leaseStore: LeaseStore | undefined;
  readonly clock: Clock;
  readonly settings: RuntimeSettings;
  readonly flows = new FlowRegistry();
  readonly leases: LeaseManager | undefined;
  readonly presence: NodePresence | undefined;
  readonly commits: GroupCommit;
  readonly executions: LocalExecutions;
  readonly links: ExecutionLinks;
  readonly recovery: ExecutionRecovery;
  readonly events: RuntimeEvents;
  readonly suspects: SuspectLane;
  readonly storeRetried = new Set<string>();
  private stopping = false;
  private readonly onError: ((error: unknown) => void) | undefined;

  /** Throws `INVALID_ARGUMENT` for bad options (see `resolveSettings`, `nodeId`). */
  constructor(options: KernelRuntimeOptions) {
    // Without a lease store of its own, a runtime uses its event store's (same database), so
    // that recovery knows which nodes are alive; leaseMode 'off' still turns leases off.
    this.leaseStore = options.leases ?? options.store.defaultLeaseStore?.();
    this.settings = resolveSettings(
      this.leaseStore === undefined ? options : { ...options, leases: this.leaseStore },
    );
    this.store = options.store;
    this.snapshots = options.snapshots;
    this.clock = options.clock ?? systemClock;
    this.onError = options.onError;
    this.events = new RuntimeEvents((error) => this.onError?.(error));
    this.suspects = new SuspectLane(this.clock);
    this.nodeId =
      options.nodeId === undefined
        ? `${hostname()}-${process.pid}-${mintId()}`
        : checkLeaseOwner(options.nodeId, 'nodeId');
    this.leases =
      this.leaseStore === undefined || this.settings.leaseMode === 'off'
        ? undefined
        : new LeaseManager({
            store: this.leaseStore,
            nodeId: this.nodeId,
            clock: this.clock,
            ttlMs: this.settings.leaseTtlMs,
            renewEveryMs: this.settings.renewEveryMs,
            lazyGraceMs: this.settings.lazyGraceMs,
            events: this.events,
            onLost: (executionIds) => this.executions.leasesLost(executionIds),
            onError: (error) => this.report(error),
          });
    this.presence =
      this.leases === undefined || this.leaseStore === undefined
        ? undefined
        : new NodePresence({
            leaseStore: this.leaseStore,
            nodeId: this.nodeId,
            clock: this.clock,
            events: this.events,
            report: (error) => this.report(error),
          });
    this.commits = new GroupCommit(this.store, this.clock, this.settings.groupCommitMax, (error) =>
      this.report(error),
    );
    this.executions = new LocalExecutions(this);
    this.links = new ExecutionLinks(this);
    this.recovery = new ExecutionRecovery(this);
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  report(error: unknown): void {
    this.events.emit('store:error', { nodeId: this.nodeId, error });
    this.onError?.(error);
  }

  assertRunning(): void {
    if (this.stopping) {
      throw new LoomError(
        ErrorCode.RUNTIME_SHUT_DOWN,
        `the runtime on ${this.nodeId} is shut down`,
      );
    }
  }

  /** Marks the start of shutdown; false if it had already begun. */
  beginShutdown(): boolean {
    if (this.stopping) return false;
    this.stopping = true;
    return true;
  }
}
