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
import type { KernelContext } from './kernel-context.js';
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
 * The runtime's {@link KernelContext}, the composition root of one node: built once per runtime
 * (by `KernelRuntime` only), its pieces built last. It lives apart from the interface the pieces
 * share so that they never import what builds them (ADR 0046, step 1).
 */
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
            onRegained: () => this.recovery.claimRegained(),
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
