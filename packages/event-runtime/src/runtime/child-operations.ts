import { ErrorCode, LoomError } from '../errors.js';
import type { DriverScope } from './driver-scope.js';
import { childFailed, never, toJson } from './driver-support.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import type { StepRecord } from './execution-state.js';
import type { Flow } from './flow.js';
import { EventType, type RecordedError } from './kernel-events.js';

/**
 * `ctx.child` and `ctx.continueAsNew`: operations that start another execution (idempotently,
 * behind a durability barrier) and, for a child, wait for its outcome.
 */
export class ChildOperations {
  constructor(private readonly scope: DriverScope) {}

  /** `ctx.child`: starts the child once and returns its output (or throws `CHILD_FAILED`). */
  async child(
    flow: Flow<never, unknown>,
    input: unknown,
    executionId: string | undefined,
  ): Promise<unknown> {
    const { journal, state, suspension } = this.scope;
    const { links } = this.scope.kernel;
    const parentId = this.scope.executionId;
    if (suspension.suspending) return never();
    const claim = this.scope.claim('child', flow?.name);
    const recorded = claim.recorded;
    if (recorded !== undefined && recorded.status !== 'started') {
      if (recorded.status === 'failed') {
        throw childFailed(
          parentId,
          recorded.childId ?? '',
          recorded.error?.name === 'Cancelled' ? 'cancelled' : 'failed',
          recorded.error,
        );
      }
      return recorded.result ?? null;
    }
    const childId = recorded?.childId ?? executionId ?? `${parentId}.${claim.index}`;
    if (recorded === undefined) {
      const inputValue = toJson(input, `the input of child '${claim.name}'`, parentId);
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
        await links.startChild(flow, inputValue, childId, {
          executionId: parentId,
          index: claim.index,
        });
      } finally {
        suspension.settleInFlight();
      }
    }
    suspension.beginInFlight();
    let outcome: ExecutionOutcome | undefined;
    try {
      outcome = await links.childOutcome(childId);
    } finally {
      suspension.settleInFlight();
    }
    this.scope.interrupt();
    if (outcome === undefined) return suspension.block(null);
    const record = state.steps[claim.index] as StepRecord;
    if (outcome.status === 'completed') {
      journal.record(EventType.childCompleted, {
        index: claim.index,
        childId,
        status: 'completed',
        output: outcome.output,
      });
      record.status = 'completed';
      record.result = outcome.output;
      return outcome.output;
    }
    const error: RecordedError =
      outcome.status === 'failed'
        ? outcome.error
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
    throw childFailed(parentId, childId, status, error);
  }

  /** `ctx.continueAsNew`: starts the successor, then ends this execution as continued. */
  async continueAsNew(input: unknown): Promise<never> {
    const { executionId, state, suspension } = this.scope;
    if (suspension.suspending) return never();
    this.scope.interrupt();
    const flow = this.scope.flow();
    const inputValue = toJson(input, 'the continue-as-new input', executionId);
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
    throw new LoomError(
      ErrorCode.EXECUTION_CANCELLED,
      `execution ${executionId} continued as ${successorId}`,
      {
        executionId,
        successorId,
      },
    );
  }
}
