import type { JsonValue } from '../envelope.js';
import { waitKindBits } from '../wait-kinds.js';
import {
  childEnded,
  childIdOf,
  childStarted,
  replayChild,
  successorOf,
} from './core/child-records.js';
import { childMissing, type ExecutionOutcome } from './core/execution-outcome.js';
import { continuedAsNew } from './core/flow-unwind.js';
import type { ChildLinks } from './driver-node.js';
import type { DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import { childEndedIn } from './execution-links.js';
import type { Flow } from './flow.js';
import { isTransientStoreError } from './store-retry.js';

/**
 * `ctx.child` and `ctx.continueAsNew`: operations that start another execution (idempotently,
 * behind a durability barrier) and, for a child, wait for its outcome. What they record the
 * machine decides (`core/child-records.ts`).
 */
export class ChildOperations {
  constructor(private readonly scope: DriverScope) {}

  /**
   * Starts the child (idempotent on its id). A store that fails meanwhile stops this driver, as a
   * failed barrier does, instead of failing the parent's flow: the parent resumes later, finds
   * its `child.started` and the child missing, and starts it then.
   */
  private async startChild(
    flow: Flow<never, unknown>,
    input: JsonValue,
    childId: string,
    index: number,
  ): Promise<void> {
    try {
      await this.scope.kernel.links.startChild(flow, input, childId, {
        executionId: this.scope.executionId,
        index,
      });
    } catch (error) {
      throw isTransientStoreError(error) ? this.scope.stopError(error) : error;
    }
  }

  /** The child's outcome from its log; a transient store failure stops this driver (ADR 0010). */
  private async childOutcome(childId: string): ReturnType<ChildLinks['childOutcome']> {
    try {
      return await this.scope.kernel.links.childOutcome(childId);
    } catch (error) {
      throw isTransientStoreError(error) ? this.scope.stopError(error) : error;
    }
  }

  /** `ctx.child`: starts the child once and returns its output (or throws `CHILD_FAILED`). */
  async child(
    flow: Flow<never, unknown>,
    input: unknown,
    executionId: string | undefined,
  ): Promise<unknown> {
    const { machine, suspension } = this.scope;
    const parentId = this.scope.executionId;
    this.scope.ensureOpen('child', flow?.name);
    if (machine.suspending) return never();
    const claim = machine.claim('child', flow?.name);
    const recorded = claim.recorded;
    if (recorded !== undefined && recorded.status !== 'started') return replayChild(machine, claim);
    const childId = childIdOf(claim, executionId, parentId);
    if (recorded === undefined) {
      const inputValue = childStarted(machine, claim, childId, input);
      this.scope.carryOut();
      suspension.beginInFlight();
      try {
        await this.scope.awaitBarrier();
        await this.startChild(flow, inputValue, childId, claim.index);
      } finally {
        suspension.settleInFlight();
      }
    }
    suspension.beginInFlight();
    let outcome: ExecutionOutcome | undefined;
    let signalsSeen = 0;
    try {
      let found = await this.childOutcome(childId);
      if (found === childMissing) {
        // Replayed: `child.started` is durable but the child's own start is not (the parent
        // died between the two). Start it now; the start is idempotent on the child's id.
        await this.startChild(flow, input as JsonValue, childId, claim.index);
        found = await this.childOutcome(childId);
      }
      outcome = found === childMissing ? undefined : found;
      if (outcome === undefined) {
        // About to block: the newest inbox id is the suspension's guard, so a child that ends
        // before the suspension is durable makes it due at once (ADR 0033). A child that ended
        // since the look above already signalled: look at it again instead of waiting.
        await this.scope.awaitInbox(claim.index);
        signalsSeen = machine.inbox.newestSeen;
        if (childEndedIn(machine.inbox.read, childId)) {
          found = await this.childOutcome(childId);
          outcome = found === childMissing ? undefined : found;
        }
      }
    } finally {
      suspension.settleInFlight();
    }
    this.scope.interrupt();
    if (outcome === undefined) return suspension.block(null, signalsSeen, waitKindBits.child);
    const ended = childEnded(machine, claim, childId, outcome);
    this.scope.carryOut();
    if (!ended.ok) throw ended.error;
    return ended.output;
  }

  /** `ctx.continueAsNew`: starts the successor, then ends this execution as continued. */
  async continueAsNew(input: unknown): Promise<never> {
    const { executionId, machine, state, suspension } = this.scope;
    this.scope.ensureOpen('continueAsNew');
    if (machine.suspending) return never();
    this.scope.interrupt();
    const flow = this.scope.flow();
    // Refused before the successor starts; its start checks its exact started event.
    const { successorId, input: inputValue } = successorOf(machine, input);
    suspension.beginInFlight();
    try {
      await this.scope.awaitBarrier();
      await this.scope.kernel.links.startSuccessor(flow, inputValue, successorId, state);
    } finally {
      suspension.settleInFlight();
    }
    this.scope.continueAs(successorId);
    // Unwind the flow: the driver writes the terminal whatever the flow does with this.
    throw continuedAsNew(executionId, successorId);
  }
}
