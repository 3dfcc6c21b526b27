// The records of a durable wait (`ctx.sleep`, `ctx.sleepUntil`, `ctx.waitForSignal`), decided by
// the execution's machine: when a timer is due and that it fired, when a signal wait times out,
// which inbox signal a wait takes (never one a parallel wait took, never one that came at or
// after its deadline: ADR 0042), and what a replay answers. Each function queues what it records
// on the machine and applies it to the machine's state; the signals come from the machine's inbox
// (`SignalInbox`, filled by its `inboxRead` input); the shell reads the store's inbox and arms the
// in-memory timers on the machine's commands.
import type { JsonValue, StoredSignal } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { decodePayload } from '../../internal/json-codec.js';
import type { Claim, ExecutionMachine } from './execution-machine.js';
import type { StepRecord } from './execution-state.js';
import { EventType } from './kernel-events.js';
import { encodeRecorded, recordedValue, replayedValue } from './recorded-values.js';

/** What `waitForSignal` gives back: the signal's payload, or that the wait timed out. */
export type SignalWait =
  | { received: true; payload: JsonValue; signalId: number }
  | { received: false };

/**
 * A timer (`claim`) the flow asked for: when it is due. New: `atMs`, or `ms` after `nowMs` (the
 * runtime's clock), checked and queued as `timer.scheduled`; replayed: the logged time. Throws
 * `INVALID_ARGUMENT` for a time that is not a whole number of ms within 100 years.
 */
export function timerDue(
  machine: ExecutionMachine,
  claim: Claim,
  atMs: number | undefined,
  ms: number | undefined,
  nowMs: number,
): number {
  const logged = claim.recorded?.wakeAtMs;
  if (logged !== undefined && logged !== null) return logged;
  const executionId = machine.executionId;
  const wakeAtMs =
    atMs === undefined
      ? nowMs + checkDuration(ms, executionId)
      : checkInstant(atMs, nowMs, executionId);
  machine.record(
    EventType.timerScheduled,
    { index: claim.index, name: claim.name, wakeAtMs },
    undefined,
  );
  machine.state.steps[claim.index] = {
    kind: 'timer',
    name: claim.name,
    status: 'started',
    wakeAtMs,
  };
  return wakeAtMs;
}

/** The timer (`claim`) is due: queues `timer.fired`. */
export function timerFired(machine: ExecutionMachine, claim: Claim): void {
  machine.record(EventType.timerFired, { index: claim.index, name: claim.name }, undefined);
  const record = machine.state.steps[claim.index];
  if (record !== undefined) record.status = 'completed';
}

/** A signal wait (`claim`) the log has an outcome for: the signal again, or the timeout. */
export function replaySignal(machine: ExecutionMachine, claim: Claim): SignalWait {
  const recorded = claim.recorded as StepRecord;
  return recorded.signalId === undefined
    ? { received: false }
    : {
        received: true,
        payload: replayedValue(recorded.result, machine.settings.keepResults),
        signalId: recorded.signalId,
      };
}

/**
 * A signal wait (`claim`) the flow asked for: when it times out (null: never). New: `timeoutMs`
 * after `nowMs`, checked and queued as `signal.waiting`; replayed: the logged time.
 */
export function signalTimeoutAt(
  machine: ExecutionMachine,
  claim: Claim,
  timeoutMs: number | undefined,
  nowMs: number,
): number | null {
  if (claim.recorded !== undefined) return claim.recorded.wakeAtMs ?? null;
  const timeoutAtMs =
    timeoutMs === undefined ? null : nowMs + checkDuration(timeoutMs, machine.executionId);
  machine.record(
    EventType.signalWaiting,
    { index: claim.index, name: claim.name, timeoutAtMs },
    undefined,
  );
  machine.state.steps[claim.index] = {
    kind: 'signal',
    name: claim.name,
    status: 'started',
    wakeAtMs: timeoutAtMs,
  };
  return timeoutAtMs;
}

/**
 * What the signal wait (`claim`, timing out at `timeoutAtMs`) ends with, given the signals the
 * machine's inbox has read:
 * the first one of its name no other wait took, taken and queued as `signal.received`; or, when a
 * signal came at or after the deadline (proof it passed, whatever this node's clock says) or
 * `nowMs` is past it, the timeout, queued as `signal.timed_out` (with the late signal, which stays
 * for a later wait). Undefined when the wait must block. Throws `LIMIT_EXCEEDED`, recording
 * nothing, for a signal too big for the event (its fields count), and the same on replay.
 */
export function signalOutcome(
  machine: ExecutionMachine,
  claim: Claim,
  timeoutAtMs: number | null,
  nowMs: number,
): SignalWait | undefined {
  const inbox = machine.inbox;
  const found = inbox.find(claim.name);
  const late = found !== undefined && timeoutAtMs !== null && found.at >= timeoutAtMs;
  const record = machine.state.steps[claim.index] as StepRecord;
  if (found !== undefined && !late) {
    inbox.consume(found.signalId);
    const payload = {
      index: claim.index,
      name: claim.name,
      signalId: found.signalId,
      payload: found.payload,
    };
    const text = encodeRecorded(payload, `signal ${found.signalId} ('${claim.name}')`, {
      executionId: machine.executionId,
      signalId: found.signalId,
    });
    machine.record(EventType.signalReceived, payload, text);
    const value = recordedValue(found.payload, text, 'payload');
    machine.state.consumedSignals.push(found.signalId);
    record.status = 'completed';
    record.signalId = found.signalId;
    // A separate copy for the hot state (snapshots), so the flow cannot change it.
    record.result = machine.settings.keepResults
      ? (decodePayload(text) as { payload: JsonValue }).payload
      : value;
    return { received: true, payload: value, signalId: found.signalId };
  }
  if (late || (timeoutAtMs !== null && nowMs >= timeoutAtMs)) {
    machine.record(
      EventType.signalTimedOut,
      late
        ? { index: claim.index, name: claim.name, lateSignalId: (found as StoredSignal).signalId }
        : { index: claim.index, name: claim.name },
      undefined,
    );
    record.status = 'completed';
    return { received: false };
  }
  return undefined;
}

/** The longest durable wait: 100 years, in milliseconds. */
const durationMaxMs = 100 * 365 * 24 * 3_600_000;

function invalidTime(what: string, value: unknown, executionId: string): never {
  throw new LoomError(
    ErrorCode.INVALID_ARGUMENT,
    `${what} must be a non-negative integer of milliseconds at most 100 years ahead, got ${String(value)}`,
    { executionId, actual: value },
  );
}

/** A duration in ms: a non-negative safe integer of at most 100 years. Throws `INVALID_ARGUMENT`. */
function checkDuration(ms: unknown, executionId: string): number {
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0 || ms > durationMaxMs) {
    invalidTime('a duration', ms, executionId);
  }
  return ms;
}

/**
 * An instant (epoch ms) at most 100 years after `nowMs`, which is the runtime's clock: judged by
 * the wall clock, a simulated or skewed clock would refuse good instants or accept bad ones.
 */
function checkInstant(atMs: unknown, nowMs: number, executionId: string): number {
  if (
    typeof atMs !== 'number' ||
    !Number.isSafeInteger(atMs) ||
    atMs < 0 ||
    atMs > nowMs + durationMaxMs
  ) {
    invalidTime('an instant', atMs, executionId);
  }
  return atMs;
}
