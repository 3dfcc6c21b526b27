// The records of a step (`ctx.step`, `ctx.transaction`), decided by the execution's machine: its
// start, its attempts and their failures, its interruptions and the poison rule (ADR 0031), its
// outcome, and what a replay answers. Each function queues what it records on the machine and
// applies it to the machine's state; the shell runs the effect and drains the queue.
import type { JsonValue } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { decodePayload } from '../../internal/json-codec.js';
import type { Claim, ExecutionMachine } from './execution-machine.js';
import type { StepRecord } from './execution-state.js';
import {
  EventType,
  type KernelEventType,
  type StepAttemptStartedPayload,
  type StepCompletedPayload,
  type StepFailedPayload,
  type StepInterruptedPayload,
} from './kernel-events.js';
import { recordError } from './recorded-error.js';
import { encodeRecorded, recordedValue, replayedValue, stepFailed } from './recorded-values.js';
import type { ResolvedRetry } from './step-retry-policy.js';

/**
 * A step (`claim`) the log has an outcome for: its result again (decoded afresh unless the state
 * keeps it only for snapshots), or the `STEP_FAILED` it failed with.
 */
export function replayStep(machine: ExecutionMachine, claim: Claim): JsonValue {
  const recorded = machine.state.steps[claim.index];
  if (recorded?.status === 'failed') {
    throw stepFailed(
      machine.executionId,
      claim.index,
      recorded.name,
      recorded.error,
      undefined,
      recorded.attempts ?? 1,
    );
  }
  return replayedValue(recorded?.result, machine.settings.keepResults);
}

/** A new step starts: queues `step.started` (marked idempotent or transactional when it is). */
export function stepStarted(
  machine: ExecutionMachine,
  claim: Claim,
  mark: 'idempotent' | 'transactional' | undefined,
): void {
  const payload: JsonValue =
    mark === undefined
      ? { index: claim.index, name: claim.name }
      : { index: claim.index, name: claim.name, [mark]: true };
  machine.record(EventType.stepStarted, payload, undefined);
  machine.state.steps[claim.index] = { name: claim.name, status: 'started' };
}

/**
 * A replayed step's attempt was in flight when the node before this one stopped (ADR 0031):
 * queues one more `step.interrupted`, or, past `stepInterruptionsMax`, fails the step with
 * `STEP_POISONED` and returns that error (its effect must not run again).
 */
export function stepInterrupted(machine: ExecutionMachine, claim: Claim): LoomError | undefined {
  const recorded = machine.state.steps[claim.index] as StepRecord;
  const interruptions = (recorded.interruptions ?? 0) + 1;
  const max = machine.settings.stepInterruptionsMax;
  if (interruptions > max) {
    return failStep(
      machine,
      claim,
      new LoomError(
        ErrorCode.STEP_POISONED,
        `step '${claim.name}' of execution ${machine.executionId} was interrupted ${max} ` +
          'times in a row (its process died or lost the execution while the effect ran): it is ' +
          'treated as poison and not run again. Fix the step, then runtime.retry(executionId)',
        { executionId: machine.executionId, step: claim.name, interruptions: max },
      ),
      // The interrupted attempt counts as made: a retried step's attempts so far, plus it.
      recorded.attempts === undefined ? undefined : recorded.attempts + 1,
    );
  }
  const payload: StepInterruptedPayload = { index: claim.index, name: claim.name, interruptions };
  machine.record(EventType.stepInterrupted, payload as never, undefined);
  machine.state.steps[claim.index] = { ...recorded, interruptions };
  return undefined;
}

/**
 * The attempt the step makes next: its number, queuing `step.attempt_started` first when the
 * attempt is a retry's or the first after `runtime.retry`, so a crash inside it reads in the log
 * as an attempt in flight (ADR 0031). Call once the step's backoff (`retryAtMs`), if any, passed.
 */
export function nextAttempt(machine: ExecutionMachine, claim: Claim): number {
  const record = machine.state.steps[claim.index] as StepRecord;
  const attempt = (record.attempts ?? 0) + 1;
  if (record.retryAtMs !== undefined || record.reopened === true) {
    const payload: StepAttemptStartedPayload = { index: claim.index, name: claim.name, attempt };
    machine.record(EventType.stepAttemptStarted, payload as never, undefined);
    const { retryAtMs: _due, reopened: _reopened, ...rest } = record;
    machine.state.steps[claim.index] = rest;
  }
  return attempt;
}

/**
 * Attempt `attempt` of a step threw `thrown`. With a retry policy (`retry`) that allows another
 * attempt and `mayRetry` (the user's `retryable` said yes and nothing aborted), queues
 * `step.attempt_failed` with the next attempt's time (`nowMs` + the policy's delay) and returns
 * undefined; otherwise fails the step and returns the error the flow gets.
 */
export function attemptThrew(
  machine: ExecutionMachine,
  claim: Claim,
  attempt: number,
  thrown: unknown,
  retry: ResolvedRetry | undefined,
  mayRetry: boolean,
  nowMs: number,
): LoomError | undefined {
  if (retry === undefined) return failStep(machine, claim, thrown, undefined);
  if (!mayRetry || attempt >= retry.attempts) return failStep(machine, claim, thrown, attempt);
  const retryAtMs = nowMs + retry.delayMs(attempt);
  const { index, name } = claim;
  const payload = { index, name, attempt, error: recordError(thrown), retryAtMs };
  machine.record(EventType.stepAttemptFailed, payload as never, undefined);
  machine.state.steps[index] = { name, status: 'started', attempts: attempt, retryAtMs };
  return undefined;
}

/**
 * Attempt `attempts` (undefined: a step without retries) of a step returned `result` (`record`:
 * a `ctx.record`, marked so in its payload): queues
 * `step.completed` and returns the value the flow gets. A result the log cannot hold fails the
 * step instead (durably, so a replay fails it the same way rather than run the effect again):
 * throws that `STEP_FAILED`.
 */
export function effectReturned(
  machine: ExecutionMachine,
  claim: Claim,
  result: unknown,
  attempts: number | undefined,
  record?: true,
): JsonValue {
  const payload: StepCompletedPayload =
    record === undefined
      ? { index: claim.index, name: claim.name, result: (result ?? null) as JsonValue }
      : { index: claim.index, name: claim.name, record, result: (result ?? null) as JsonValue };
  let text: string;
  try {
    text = encodeResult(machine, claim, payload as never);
  } catch (refused) {
    throw failStep(machine, claim, refused, attempts, record);
  }
  machine.record(EventType.stepCompleted, payload as never, text);
  stepCommitted(machine, claim, text);
  machine.flushBesideOthers();
  return recordedValue(payload.result, text, 'result');
}

/**
 * A transaction's `step.completed`, for the store to commit with the work: the event, with the
 * payload's text (the journal appends it itself: the machine's next sequence moves past it). Throws `PAYLOAD_NOT_JSON` or `LIMIT_EXCEEDED` (the work then rolls back).
 */
export function transactionCompleted(
  machine: ExecutionMachine,
  claim: Claim,
  result: unknown,
): { type: KernelEventType; payload: JsonValue; payloadText: string } {
  const payload = { index: claim.index, name: claim.name, result: (result ?? null) as JsonValue };
  const payloadText = encodeResult(machine, claim, payload);
  // The journal appends it with the work, outside the machine's queue, next in its numbering.
  machine.appendedOutside();
  return { type: EventType.stepCompleted, payload, payloadText };
}

/** The step's `step.completed` (its payload text `text`) is recorded: the state has it too. */
export function stepCommitted(machine: ExecutionMachine, claim: Claim, text: string): void {
  // The hot state keeps results only for snapshots: decoded, so the flow cannot change them.
  machine.state.steps[claim.index] = machine.settings.keepResults
    ? {
        name: claim.name,
        status: 'completed',
        result: (decodePayload(text) as { result: JsonValue }).result,
      }
    : { name: claim.name, status: 'completed' };
}

/**
 * Fails the step with what was thrown (and, for a retried step, the `attempts` it made): queues
 * `step.failed` and returns the `STEP_FAILED` the flow gets.
 */
export function failStep(
  machine: ExecutionMachine,
  claim: Claim,
  thrown: unknown,
  attempts: number | undefined,
  asRecord?: true,
): LoomError {
  const error = recordError(thrown);
  const payload: StepFailedPayload =
    asRecord === undefined
      ? { index: claim.index, name: claim.name, error }
      : { index: claim.index, name: claim.name, record: asRecord, error };
  const record: StepRecord = { name: claim.name, status: 'failed', error };
  if (attempts !== undefined) {
    payload.attempts = attempts;
    record.attempts = attempts;
  }
  machine.record(EventType.stepFailed, payload as never, undefined);
  machine.state.steps[claim.index] = record;
  machine.flushBesideOthers();
  return stepFailed(machine.executionId, claim.index, claim.name, error, thrown, attempts ?? 1);
}

/** Encodes a `step.completed` payload once; throws `PAYLOAD_NOT_JSON` or `LIMIT_EXCEEDED`. */
function encodeResult(
  machine: ExecutionMachine,
  claim: Claim,
  payload: { [key: string]: unknown },
): string {
  return encodeRecorded(payload, `the result of step '${claim.name}'`, {
    executionId: machine.executionId,
    step: claim.name,
    stepIndex: claim.index,
  });
}
