import type { JsonValue } from '../envelope.js';
import { waitKindBits } from '../wait-kinds.js';
import {
  childEnded,
  childIdOf,
  childStarted,
  replayChild,
  successorOf,
} from './core/child-records.js';
import { successorOp } from './core/execution-machine.js';
import { type ChildLookup, childMissing, type ExecutionOutcome } from './core/execution-outcome.js';
import { continuedAsNew } from './core/flow-unwind.js';
import type { DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import { childEndedIn } from './execution-links.js';
import type { Flow } from './flow.js';

/**
 * `ctx.child` and `ctx.continueAsNew`: operations that start another execution (idempotently,
 * behind a durability barrier) and, for a child, wait for its outcome. What they record the
 * machine decides (`core/child-records.ts`); the starts and lookups are its commands
 * (`startChild`, `lookupChild`, `startSuccessor`), carried out by the driver, which finds here
 * the flow a child starts with.
 */
export class ChildOperations {
  /** The flows of the children being started, by their operation index. */
  private readonly starting = new Map<number, Flow<never, unknown>>();

  constructor(private readonly scope: DriverScope) {}

  /** The flow child `op` starts with (command `startChild`). */
  flowOf(op: number): Flow<never, unknown> {
    return this.starting.get(op) as Flow<never, unknown>;
  }

  /**
   * Starts the child (idempotent on its id) once the machine grants it: after the `durable` that
   * covers its `child.started`. A store that fails meanwhile stops this driver, as a failed
   * barrier does, instead of failing the parent's flow: the parent resumes later, finds its
   * `child.started` and the child missing, and starts it then.
   */
  private async startChild(
    flow: Flow<never, unknown>,
    input: JsonValue,
    childId: string,
    op: number,
  ): Promise<void> {
    const started = this.scope.awaitCompletion(op);
    this.starting.set(op, flow);
    this.scope.machine.requestChildStart(op, childId, input);
    this.scope.carryOut();
    try {
      await started;
    } finally {
      this.starting.delete(op);
    }
  }

  /** The child's outcome from its log; a transient store failure stops this driver (ADR 0010). */
  private childOutcome(op: number, childId: string): Promise<ChildLookup> {
    const found = this.scope.awaitCompletion(op);
    this.scope.machine.requestChildLookup(op, childId);
    this.scope.carryOut();
    return found as Promise<ChildLookup>;
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
    const op = claim.index;
    const childId = childIdOf(claim, executionId, parentId);
    if (recorded === undefined) {
      const inputValue = childStarted(machine, claim, childId, input);
      await this.startChild(flow, inputValue, childId, op);
    }
    // In flight from the first lookup to the last (the machine counts each command alone).
    suspension.beginInFlight();
    let outcome: ExecutionOutcome | undefined;
    let signalsSeen = 0;
    try {
      let found = await this.childOutcome(op, childId);
      if (found === childMissing) {
        // Replayed: `child.started` is durable but the child's own start is not (the parent
        // died between the two). Start it now; the start is idempotent on the child's id.
        await this.startChild(flow, input as JsonValue, childId, op);
        found = await this.childOutcome(op, childId);
      }
      outcome = found === childMissing ? undefined : found;
      if (outcome === undefined) {
        // About to block: the newest inbox id is the suspension's guard, so a child that ends
        // before the suspension is durable makes it due at once (ADR 0033). A child that ended
        // since the look above already signalled: look at it again instead of waiting.
        await this.scope.awaitInbox(op);
        signalsSeen = machine.inbox.newestSeen;
        if (childEndedIn(machine.inbox.read, childId)) {
          found = await this.childOutcome(op, childId);
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

  /**
   * `ctx.continueAsNew`: starts the successor once the machine grants it (everything recorded
   * before is durable), then ends this execution as continued.
   */
  async continueAsNew(input: unknown): Promise<never> {
    const { executionId, machine } = this.scope;
    this.scope.ensureOpen('continueAsNew');
    if (machine.suspending) return never();
    this.scope.interrupt();
    // Refused before the successor starts; its start checks its exact started event.
    const { successorId, input: inputValue } = successorOf(machine, input);
    const started = this.scope.awaitCompletion(successorOp);
    machine.requestSuccessorStart(successorId, inputValue);
    this.scope.carryOut();
    await started;
    this.scope.continueAs(successorId);
    // Unwind the flow: the driver writes the terminal whatever the flow does with this.
    throw continuedAsNew(executionId, successorId);
  }
}
