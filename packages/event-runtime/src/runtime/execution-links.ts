import type { JsonValue } from '../envelope.js';
import { ErrorCode, isLoomError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import type { DriverHooks } from './driver-hooks.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import type { ExecutionState } from './execution-state.js';
import type { Flow } from './flow.js';
import type { ExecutionStartedPayload } from './kernel-events.js';

/** How a new execution is linked to others: its parent, or its continue-as-new predecessor. */
export type StartLinks = Pick<
  ExecutionStartedPayload,
  'parent' | 'continuedFrom' | 'rootId' | 'generation'
>;

/** What linking executions needs of the runtime. */
export interface LinkedRuntime {
  readonly store: EventStore;
  /** Starts an execution linked to another (idempotent on its id). */
  startLinked(
    flow: Flow<never, unknown>,
    input: JsonValue,
    executionId: string,
    links: StartLinks,
  ): Promise<unknown>;
  /** The outcome of a settled execution (following continue-as-new), or undefined if it runs. */
  settledOutcome(executionId: string): Promise<ExecutionOutcome | undefined>;
  resume(executionId: string): Promise<unknown>;
  cancel(executionId: string, reason: string): Promise<boolean>;
  wakeDue(): Promise<unknown>;
  /** True when this runtime polls timers, so waking due executions here is its job. */
  pollsTimers(): boolean;
  shuttingDown(): boolean;
  onError(error: unknown): void;
}

/** The signal a settled child sends its parent (the parent reads the outcome from the child's log). */
const childSignalName = 'loom.child.settled';

/**
 * The runtime's side of parent, child and continue-as-new links: starts children and successors
 * for the driver, wakes a parent when its child settles, and cancels a cancelled parent's children.
 */
export class ExecutionLinks {
  constructor(private readonly runtime: LinkedRuntime) {}

  /** The driver hooks that start and look up linked executions. */
  driverHooks(): Pick<DriverHooks, 'startChild' | 'childOutcome' | 'startSuccessor'> {
    return {
      startChild: async (childFlow, input, childId, parent) => {
        await this.runtime.startLinked(childFlow, input, childId, { parent });
      },
      childOutcome: (childId) => this.runtime.settledOutcome(childId),
      startSuccessor: async (successorFlow, input, successorId, predecessor) => {
        const links: StartLinks = {
          continuedFrom: predecessor.executionId,
          rootId: predecessor.rootId,
          generation: predecessor.generation + 1,
        };
        if (predecessor.parent !== undefined) links.parent = predecessor.parent;
        await this.runtime.startLinked(successorFlow, input, successorId, links);
      },
    };
  }

  /** Wakes a parent waiting in `ctx.child` (the parent reads the outcome from the child's log). */
  async notifyParent(parentId: string, childId: string): Promise<void> {
    try {
      await this.runtime.store.sendSignal({
        executionId: parentId,
        name: childSignalName,
        payload: { childId },
      });
    } catch (error) {
      if (!isLoomError(error, ErrorCode.EXECUTION_SETTLED)) this.runtime.onError(error);
      return;
    }
    if (this.runtime.pollsTimers() && !this.runtime.shuttingDown()) {
      await this.runtime.wakeDue().catch(() => undefined);
    }
  }

  /**
   * A signal (or a child's end) that came after the driver looked but before its suspension was
   * durable found the execution still running and set no wake time: look once more now.
   */
  async wakeIfSignalled(state: ExecutionState): Promise<void> {
    const waiting = state.steps.filter((record) => record.status === 'started');
    const names = new Set(
      waiting.filter((record) => record.kind === 'signal').map((record) => record.name),
    );
    let due = false;
    if (names.size > 0) {
      const consumed = new Set(state.consumedSignals);
      const inbox = await this.runtime.store.readSignals(state.executionId);
      due = inbox.some((signal) => names.has(signal.name) && !consumed.has(signal.signalId));
    }
    for (const record of waiting) {
      if (due || record.kind !== 'child' || record.childId === undefined) continue;
      due = (await this.runtime.settledOutcome(record.childId)) !== undefined;
    }
    if (due && !this.runtime.shuttingDown()) {
      await this.runtime.resume(state.executionId).catch((error) => this.runtime.onError(error));
    }
  }

  /** Cancels the running children of a cancelled parent (and theirs, recursively). */
  async cancelChildren(parent: ExecutionState, reason: string): Promise<void> {
    const children = parent.steps.filter(
      (record) => record.kind === 'child' && record.status === 'started',
    );
    for (const child of children) {
      if (child.childId === undefined) continue;
      try {
        await this.runtime.cancel(
          child.childId,
          `parent ${parent.executionId} was cancelled: ${reason}`,
        );
      } catch (error) {
        if (!isLoomError(error, ErrorCode.EXECUTION_NOT_FOUND)) this.runtime.onError(error);
      }
    }
  }
}
