import type { JsonValue } from '../envelope.js';
import { decodePayload } from '../internal/json-codec.js';
import { childMissing, type ExecutionOutcome } from './core/execution-outcome.js';
import type { StepRecord } from './core/execution-state.js';
import { continuedAsNew } from './core/flow-unwind.js';
import { EventType, type RecordedError } from './core/kernel-events.js';
import { recordError } from './core/recorded-error.js';
import {
  childFailed,
  encodeRecorded,
  recordedValue,
  replayedValue,
} from './core/recorded-values.js';
import type { ChildLinks } from './driver-node.js';
import type { DriverScope } from './driver-scope.js';
import { never } from './driver-support.js';
import { childEndedIn } from './execution-links.js';
import type { Flow } from './flow.js';
import { isTransientStoreError } from './store-retry.js';

/**
 * `ctx.child` and `ctx.continueAsNew`: operations that start another execution (idempotently,
 * behind a durability barrier) and, for a child, wait for its outcome.
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
    const { journal, state, suspension } = this.scope;
    const parentId = this.scope.executionId;
    this.scope.ensureOpen('child', flow?.name);
    if (suspension.suspending) return never();
    const claim = this.scope.claim('child', flow?.name);
    const recorded = claim.recorded;
    if (recorded !== undefined && recorded.status !== 'started') {
      if (recorded.status === 'failed') {
        throw childFailed(
          parentId,
          recorded.childId ?? '',
          recorded.cancelled === true ? 'cancelled' : 'failed',
          recorded.error,
        );
      }
      return replayedValue(recorded.result, this.scope.kernel.settings.keepResults);
    }
    const childId = recorded?.childId ?? executionId ?? `${parentId}.${claim.index}`;
    if (recorded === undefined) {
      // Refused before anything is recorded; the child's start checks its exact started event.
      const checked = { input: input ?? null };
      encodeRecorded(checked, `the input of child '${claim.name}'`, { executionId: parentId });
      const inputValue = checked.input as JsonValue;
      journal.record(EventType.childStarted, {
        index: claim.index,
        name: claim.name,
        childId,
      });
      state.steps[claim.index] = {
        kind: 'child',
        name: claim.name,
        status: 'started',
        childId,
      };
      suspension.beginInFlight();
      try {
        await this.scope.barrier();
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
        const inbox = await this.scope.readInbox();
        signalsSeen = inbox[inbox.length - 1]?.signalId ?? 0;
        if (childEndedIn(inbox, childId)) {
          found = await this.childOutcome(childId);
          outcome = found === childMissing ? undefined : found;
        }
      }
    } finally {
      suspension.settleInFlight();
    }
    this.scope.interrupt();
    if (outcome === undefined) return suspension.block(null, signalsSeen);
    const record = state.steps[claim.index] as StepRecord;
    let refused: unknown;
    if (outcome.status === 'completed') {
      const payload = { index: claim.index, childId, status: 'completed', output: outcome.output };
      try {
        const text = encodeRecorded(payload, `the output of child ${childId}`, {
          executionId: parentId,
          childId,
        });
        journal.record(EventType.childCompleted, payload, text);
        const output = recordedValue(outcome.output, text, 'output');
        record.status = 'completed';
        // A separate copy for the hot state (snapshots), so the flow cannot change it.
        record.result = this.scope.kernel.settings.keepResults
          ? (decodePayload(text) as { output: JsonValue }).output
          : output;
        return output;
      } catch (error) {
        // The child's output fits its own log but not this one's event: the child failed here,
        // durably, so a replay fails it the same way.
        refused = error;
      }
    }
    const error: RecordedError =
      outcome.status === 'failed'
        ? outcome.error
        : refused !== undefined
          ? recordError(refused)
          : {
              name: 'Cancelled',
              message: outcome.status === 'cancelled' ? outcome.reason : outcome.status,
            };
    const status = outcome.status === 'cancelled' ? 'cancelled' : 'failed';
    journal.record(EventType.childCompleted, {
      index: claim.index,
      childId,
      status,
      error,
    } as never);
    record.status = 'failed';
    record.error = error;
    if (status === 'cancelled') record.cancelled = true;
    throw childFailed(parentId, childId, status, error);
  }

  /** `ctx.continueAsNew`: starts the successor, then ends this execution as continued. */
  async continueAsNew(input: unknown): Promise<never> {
    const { executionId, state, suspension } = this.scope;
    this.scope.ensureOpen('continueAsNew');
    if (suspension.suspending) return never();
    this.scope.interrupt();
    const flow = this.scope.flow();
    // Refused before the successor starts; its start checks its exact started event.
    const checked = { input: input ?? null };
    encodeRecorded(checked, 'the continue-as-new input', { executionId });
    const inputValue = checked.input as JsonValue;
    const successorId = `${state.rootId}#${state.generation + 1}`;
    suspension.beginInFlight();
    try {
      await this.scope.barrier();
      await this.scope.kernel.links.startSuccessor(flow, inputValue, successorId, state);
    } finally {
      suspension.settleInFlight();
    }
    this.scope.continueAs(successorId);
    // Unwind the flow: the driver writes the terminal whatever the flow does with this.
    throw continuedAsNew(executionId, successorId);
  }
}
