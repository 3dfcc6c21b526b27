// The records of a child execution (`ctx.child`) and of a continue-as-new, decided by the
// execution's machine: the child's id, its start record, its outcome as this execution records
// it (a failed or cancelled child, or an output too big for this log, is `CHILD_FAILED`), what a
// replay answers, and the successor's id. Each function queues what it records on the machine and
// applies it to the machine's state; the shell starts the executions and looks up their outcomes.
import type { JsonValue } from '../../envelope.js';
import type { LoomError } from '../../errors.js';
import { decodePayload } from '../../internal/json-codec.js';
import type { Claim, ExecutionMachine } from './execution-machine.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import type { StepRecord } from './execution-state.js';
import { EventType, type RecordedError } from './kernel-events.js';
import { recordError } from './recorded-error.js';
import { childFailed, encodeRecorded, recordedValue, replayedValue } from './recorded-values.js';

/**
 * A child (`claim`) the log has an outcome for: its output again, or the `CHILD_FAILED` it ended
 * with (thrown).
 */
export function replayChild(machine: ExecutionMachine, claim: Claim): JsonValue {
  const recorded = claim.recorded as StepRecord;
  if (recorded.status === 'failed') {
    throw childFailed(
      machine.executionId,
      recorded.childId ?? '',
      recorded.cancelled === true ? 'cancelled' : 'failed',
      recorded.error,
    );
  }
  return replayedValue(recorded.result, machine.settings.keepResults);
}

/** The child's id: the logged one, else the one the flow asked for, else `<parent>.<index>`. */
export function childIdOf(claim: Claim, requested: string | undefined, parentId: string): string {
  return claim.recorded?.childId ?? requested ?? `${parentId}.${claim.index}`;
}

/**
 * A new child (`claim`, id `childId`): checks its input (refused before anything is recorded:
 * `PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`), queues `child.started`, and returns the input to start
 * it with.
 */
export function childStarted(
  machine: ExecutionMachine,
  claim: Claim,
  childId: string,
  input: unknown,
): JsonValue {
  // The child's own start checks its exact started event; this refuses what could never fit.
  const checked = { input: (input ?? null) as JsonValue };
  encodeRecorded(checked, `the input of child '${claim.name}'`, {
    executionId: machine.executionId,
  });
  machine.record(
    EventType.childStarted,
    { index: claim.index, name: claim.name, childId },
    undefined,
  );
  machine.state.steps[claim.index] = {
    kind: 'child',
    name: claim.name,
    status: 'started',
    childId,
  };
  return checked.input;
}

/**
 * The child (`claim`, id `childId`) ended with `outcome`: queues `child.completed` and returns its
 * output, or, for a failed or cancelled child, returns the `CHILD_FAILED` the flow gets (to
 * throw). An output that fits the child's log but not this one's event fails the child here,
 * durably, so a replay fails it the same way.
 */
export function childEnded(
  machine: ExecutionMachine,
  claim: Claim,
  childId: string,
  outcome: ExecutionOutcome,
): { ok: true; output: JsonValue } | { ok: false; error: LoomError } {
  const parentId = machine.executionId;
  const record = machine.state.steps[claim.index] as StepRecord;
  let refused: unknown;
  if (outcome.status === 'completed') {
    const payload = { index: claim.index, childId, status: 'completed', output: outcome.output };
    try {
      const text = encodeRecorded(payload, `the output of child ${childId}`, {
        executionId: parentId,
        childId,
      });
      machine.record(EventType.childCompleted, payload, text);
      const output = recordedValue(outcome.output, text, 'output');
      record.status = 'completed';
      // A separate copy for the hot state (snapshots), so the flow cannot change it.
      record.result = machine.settings.keepResults
        ? (decodePayload(text) as { output: JsonValue }).output
        : output;
      return { ok: true, output };
    } catch (error) {
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
  machine.record(
    EventType.childCompleted,
    { index: claim.index, childId, status, error } as never,
    undefined,
  );
  record.status = 'failed';
  record.error = error;
  if (status === 'cancelled') record.cancelled = true;
  return { ok: false, error: childFailed(parentId, childId, status, error) };
}

/**
 * A continue-as-new: the successor's id (`<root>#<generation + 1>`) and its input, checked before
 * the successor starts (`PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED`). Records nothing: the terminal,
 * `execution.continued_as_new`, is written when the flow unwinds.
 */
export function successorOf(
  machine: ExecutionMachine,
  input: unknown,
): { successorId: string; input: JsonValue } {
  const checked = { input: (input ?? null) as JsonValue };
  encodeRecorded(checked, 'the continue-as-new input', { executionId: machine.executionId });
  const { rootId, generation } = machine.state;
  return { successorId: `${rootId}#${generation + 1}`, input: checked.input };
}
