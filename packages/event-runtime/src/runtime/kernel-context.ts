import type { Clock } from '../clock.js';
import type { EventStore } from '../event-store.js';
import type { LeaseStore } from '../lease-store.js';
import type { SnapshotStore } from '../snapshot-store.js';
import type { ExecutionOutcome } from './core/execution-outcome.js';
import type { ExecutionState } from './core/execution-state.js';
import type { ExecutionStartedPayload } from './core/kernel-events.js';
import type { ChildLinks } from './driver-node.js';
import type { Flow } from './flow.js';
import type { FlowRegistry } from './flow-registry.js';
import type { GroupCommit } from './group-commit.js';
import type { LeaseManager } from './lease-manager.js';
import type { NodePresence } from './node-presence.js';
import type { RuntimeEvents } from './runtime-events.js';
import type { RuntimeSettings } from './runtime-options.js';
import type { SuspectLane } from './suspect-lane.js';

/** How a new execution is linked to others: its parent, or its continue-as-new predecessor. */
export type StartLinks = Pick<
  ExecutionStartedPayload,
  'parent' | 'continuedFrom' | 'rootId' | 'generation'
>;

/** What the pieces use of the executions this node drives (`LocalExecutions`). */
export interface ExecutionsPort {
  /** True while this node drives `executionId`. */
  has(executionId: string): boolean;
  /** The driver of `executionId` if this node drives it: `done` settles when it stops driving. */
  driver(executionId: string): { readonly done: Promise<ExecutionOutcome> } | undefined;
  /**
   * Starts an execution of `flow` under `requestedId` or a minted id, linked as `links` says;
   * resolves once sequence 0 is durable. `existing` is true when it already existed.
   */
  launch(
    flow: Flow<never, unknown>,
    input: unknown,
    requestedId: string | undefined,
    links: StartLinks,
  ): Promise<{ executionId: string; existing: boolean }>;
  /** Takes `executionId` over from its log and drives it here. */
  resume(executionId: string): Promise<void>;
  /** Cancels an execution, here or elsewhere; false if it had already settled. */
  cancel(executionId: string, reason: string): Promise<boolean>;
}

/** What the pieces use of the links between executions (`ExecutionLinks`). */
export interface LinksPort extends ChildLinks {
  /**
   * Claims a parent its child's end made due (the wake-up itself rode the child's terminal
   * append, ADR 0047): saves the timer poll's delay.
   */
  claimWokenParent(): Promise<void>;
  /** Resumes a suspended execution whose signal or child came while it was still running. */
  wakeIfSignalled(state: ExecutionState): Promise<void>;
  /** Cancels the running children of a cancelled parent (and theirs, recursively). */
  cancelChildren(parent: ExecutionState, reason: string): Promise<void>;
}

/** What the pieces use of timer wake-ups and recovery (`ExecutionRecovery`). */
export interface RecoveryPort {
  /** Claims up to `limit` due suspended executions and resumes them; returns the ids resumed. */
  wakeDue(limit?: number): Promise<string[]>;
}

/**
 * Everything the kernel's pieces on one node share, handed to each of them as one object: where
 * the log and its neighbours live, the clock, the settings (defaults applied once), the flows it
 * can run, the leases it holds, and the pieces themselves, so one reaches another by name
 * (`context.executions.resume(id)`) instead of through closures its owner wired up.
 *
 * The pieces keep the context and read it only while they work, never while they are built:
 * that is what lets them refer to each other. They see one another through the narrow ports
 * above, not their classes, and the class that builds them (`Kernel`) lives in
 * `kernel-node.ts`: no piece imports another through this file (ADR 0046, step 1).
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
  readonly executions: ExecutionsPort;
  /** Parent, child and continue-as-new links between executions. */
  readonly links: LinksPort;
  /** Timer wake-ups and recovery of executions nobody drives. */
  readonly recovery: RecoveryPort;
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
