import type { JsonValue, StoredSignal } from '../envelope.js';
import { ErrorCode, isLoomError } from '../errors.js';
import { childSignalName } from './child-settled-signal.js';
import { childMissing, type ExecutionOutcome } from './core/execution-outcome.js';
import type { ExecutionState } from './core/execution-state.js';
import { settledOutcomeOrMissing } from './execution-handle.js';
import type { Flow } from './flow.js';
import type { KernelContext, LinksPort, StartLinks } from './kernel-context.js';
import { isTransientStoreError } from './store-retry.js';

/**
 * The runtime's side of parent, child and continue-as-new links: starts children and successors
 * for the driver, wakes a parent when its child settles, and cancels a cancelled parent's children.
 */

/**
 * True when `inbox` has the signal that ends the wait for `childId`: its own, or that of a
 * continue-as-new successor (`<childId>#<generation>`), which is the one that notifies the parent.
 */
export function childEndedIn(inbox: readonly StoredSignal[], childId: string): boolean {
  return inbox.some((signal) => {
    if (signal.name !== childSignalName) return false;
    const payload = signal.payload as { childId?: unknown } | null;
    const id = typeof payload === 'object' && payload !== null ? payload.childId : undefined;
    return typeof id === 'string' && (id === childId || id.startsWith(`${childId}#`));
  });
}

export class ExecutionLinks implements LinksPort {
  constructor(private readonly kernel: KernelContext) {}

  /** Starts a child execution of `parent` (idempotent on its id). */
  async startChild(
    flow: Flow<never, unknown>,
    input: JsonValue,
    childId: string,
    parent: { executionId: string; index: number },
  ): Promise<void> {
    await this.kernel.executions.launch(flow, input, childId, { parent });
  }

  /**
   * A child's outcome if it settled (following continue-as-new), undefined while it runs, and
   * {@link childMissing} when it has no log at all (its parent recorded `child.started` and died
   * before starting it).
   */
  async childOutcome(childId: string): Promise<ExecutionOutcome | undefined | typeof childMissing> {
    const outcome = await settledOutcomeOrMissing(this.kernel, childId);
    return outcome === 'missing' ? childMissing : outcome;
  }

  /** Starts the continue-as-new successor of `predecessor` (idempotent on its id). */
  async startSuccessor(
    flow: Flow<never, unknown>,
    input: JsonValue,
    successorId: string,
    predecessor: ExecutionState,
  ): Promise<void> {
    const links: StartLinks = {
      continuedFrom: predecessor.executionId,
      rootId: predecessor.rootId,
      generation: predecessor.generation + 1,
    };
    if (predecessor.parent !== undefined) links.parent = predecessor.parent;
    await this.kernel.executions.launch(flow, input, successorId, links);
  }

  /**
   * Claims a parent its child's end made due. The child's terminal append already put the
   * wake-up in the parent's inbox (`AppendGuard.notify`, ADR 0047), so a process that dies before
   * this leaves the parent due for any node's timer poll: this only saves that poll's delay.
   */
  async claimWokenParent(): Promise<void> {
    // Of several nodes, the claim decides which one resumes it.
    if (this.kernel.settings.timerPollMs > 0 && !this.kernel.shuttingDown) {
      await this.kernel.recovery.wakeDue().catch(() => undefined);
    }
  }

  /**
   * A signal (or a child's end) that came after the driver looked but before its suspension was
   * durable found the execution still running and set no wake time: look once more now. Throws
   * a transient store error of the resume, so the caller schedules a resume from the log.
   */
  async wakeIfSignalled(state: ExecutionState): Promise<void> {
    const waiting = state.steps.filter((record) => record.status === 'started');
    const names = new Set(
      waiting.filter((record) => record.kind === 'signal').map((record) => record.name),
    );
    let due = false;
    if (names.size > 0) {
      const consumed = new Set(state.consumedSignals);
      const inbox = await this.kernel.store.readSignals(state.executionId);
      due = inbox.some((signal) => names.has(signal.name) && !consumed.has(signal.signalId));
    }
    for (const record of waiting) {
      if (due || record.kind !== 'child' || record.childId === undefined) continue;
      due = (await this.childOutcome(record.childId)) !== undefined;
    }
    if (due && !this.kernel.shuttingDown) {
      await this.kernel.executions.resume(state.executionId).catch((error: unknown) => {
        // A store failure while taking it over: rethrown, so the caller schedules a resume from
        // the log (nothing else would wake it: its wake-up came while it was still running).
        if (isTransientStoreError(error)) throw error;
        this.kernel.report(error);
      });
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
        await this.kernel.executions.cancel(
          child.childId,
          `parent ${parent.executionId} was cancelled: ${reason}`,
        );
      } catch (error) {
        if (!isLoomError(error, ErrorCode.EXECUTION_NOT_FOUND)) this.kernel.report(error);
      }
    }
  }
}
