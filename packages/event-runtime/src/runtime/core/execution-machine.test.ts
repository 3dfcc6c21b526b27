import { describe, expect, it } from 'vitest';
import type { JsonValue, StoredEvent, StoredSignal } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { type CommandSink, ExecutionMachine } from './execution-machine.js';
import { type ExecutionState, foldEvent } from './execution-state.js';
import { EventType } from './kernel-events.js';
import {
  attemptThrew,
  effectReturned,
  nextAttempt,
  replayStep,
  stepCommitted,
  stepInterrupted,
  stepStarted,
  transactionCompleted,
} from './step-records.js';
import {
  replaySignal,
  SignalInbox,
  signalOutcome,
  signalTimeoutAt,
  timerDue,
  timerFired,
} from './wait-records.js';

// The machine alone: scripted calls in, commands and answers out, no store, no clock, no node.

const executionId = 'ex-1';

/** The state folded from `execution.started` and then `events` (type and payload each). */
function folded(events: readonly [string, JsonValue][] = []): ExecutionState {
  let state: ExecutionState | undefined;
  const all: [string, JsonValue][] = [
    [EventType.executionStarted, { flow: 'f', version: null, input: { n: 1 } }],
    ...events,
  ];
  all.forEach(([type, payload], sequence) => {
    const event: StoredEvent = {
      executionId,
      sequence,
      type,
      payload,
      at: 0,
      position: sequence,
      prevHash: null,
      hash: '',
    };
    state = foldEvent(state, event);
  });
  return state as ExecutionState;
}

const settings = { keepResults: false, stepInterruptionsMax: 2 };

/** A machine over `state`, with results not kept and a step poisoned at its third interruption. */
function machineOver(state: ExecutionState, keepResults = false): ExecutionMachine {
  return new ExecutionMachine(state, { ...settings, keepResults });
}

/** A command as the tests see it: its kind and its arguments. */
type Command =
  | { kind: 'append'; type: string; payload: JsonValue; payloadText: string | undefined }
  | {
      kind: 'status';
      status: string;
      wakeAtMs: number | null;
      wakeOnSignalsAfter: number | undefined;
    }
  | { kind: 'flushSoon' };

/** The machine's queued commands, taken out of its queue. */
function commandsOf(machine: ExecutionMachine): Command[] {
  const taken: Command[] = [];
  const sink: CommandSink = {
    record: (type, payload, payloadText) =>
      taken.push({ kind: 'append', type, payload, payloadText }),
    setStatus: (status, wakeAtMs, wakeOnSignalsAfter) =>
      void taken.push({ kind: 'status', status, wakeAtMs, wakeOnSignalsAfter }),
    flushSoon: () => void taken.push({ kind: 'flushSoon' }),
  };
  machine.drain(sink);
  expect(machine.pending).toBe(false);
  return taken;
}

/** The machine's queued commands, every one an append, as `[type, payload]` pairs. */
function drained(machine: ExecutionMachine): [string, JsonValue][] {
  return commandsOf(machine).map((command) => {
    if (command.kind !== 'append') throw new Error(`expected an append, got ${command.kind}`);
    // A payload encoded once is stored as that text: it must be the payload's own JSON.
    if (command.payloadText !== undefined)
      expect(JSON.parse(command.payloadText)).toEqual(command.payload);
    return [command.type, command.payload];
  });
}

describe('ExecutionMachine', () => {
  it('records values and patches as it applies them, and a machine over the folded log replays them without a command', () => {
    const first = machineOver(folded());
    expect(first.claim('step', 'a')).toEqual({ index: 0, name: 'a', recorded: undefined });
    expect(first.recordValue('now', () => 1234)).toBe(1234);
    expect(first.patched('fix-1')).toBe(true);
    expect(first.recordValue('uuid', () => 'u-1')).toBe('u-1');
    const appended = drained(first);
    expect(appended).toEqual([
      [EventType.valueRecorded, { index: 1, name: 'now', value: 1234 }],
      [EventType.patchMarked, { index: 2, name: 'fix-1' }],
      [EventType.valueRecorded, { index: 3, name: 'uuid', value: 'u-1' }],
    ]);

    // The log as written (the step's own records come from the driver in this step of the plan).
    const log: [string, JsonValue][] = [
      [EventType.stepStarted, { index: 0, name: 'a' }],
      [EventType.stepCompleted, { index: 0, name: 'a', result: 7 }],
      ...appended,
    ];
    const state = folded(log);
    expect(state.steps.slice(1)).toEqual(first.state.steps.slice(1));

    const replay = machineOver(state);
    expect(replay.claim('step', 'a').recorded).toMatchObject({ status: 'completed', result: 7 });
    expect(replay.recordValue('now', () => 9999)).toBe(1234);
    expect(replay.patched('fix-1')).toBe(true);
    expect(replay.recordValue('uuid', () => 'other')).toBe('u-1');
    expect(replay.pending).toBe(false);
    expect(replay.returned({ ok: true })).toMatchObject({
      type: EventType.executionCompleted,
      payload: { output: { ok: true } },
      payloadText: '{"output":{"ok":true}}',
      outcome: { status: 'completed', output: { ok: true } },
    });
  });

  it('a patch the log went past without its marker is false, and records nothing', () => {
    const machine = machineOver(
      folded([
        [EventType.stepStarted, { index: 0, name: 'old' }],
        [EventType.stepCompleted, { index: 0, name: 'old', result: null }],
      ]),
    );
    expect(machine.patched('new-path')).toBe(false);
    expect(machine.claim('step', 'old').index).toBe(0);
    expect(machine.pending).toBe(false);
    // Past the end of the log, the same patch is new: true, and marked.
    expect(machine.patched('later')).toBe(true);
    expect(drained(machine)).toEqual([[EventType.patchMarked, { index: 1, name: 'later' }]]);
  });

  it('a step name used twice is DUPLICATE_STEP_NAME; other kinds share indexes, not names', () => {
    const machine = machineOver(folded());
    machine.claim('step', 'x');
    expect(() => machine.claim('step', 'x')).toThrow(
      expect.objectContaining({ code: ErrorCode.DUPLICATE_STEP_NAME }),
    );
    expect(machine.claim('timer', 'x').index).toBe(1);
    expect(machine.claim('signal', 'x').index).toBe(2);
    expect(() => machine.claim('step', '')).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_STEP_NAME }),
    );
    expect(() => machine.claim('step', 'a\u0000b')).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_STEP_NAME }),
    );
  });

  it('an operation that differs from the log is NON_DETERMINISM, and fails the execution even if the flow catches it', () => {
    const machine = machineOver(
      folded([
        [EventType.timerScheduled, { index: 0, name: 'wait', wakeAtMs: 10 }],
        [EventType.timerFired, { index: 0 }],
      ]),
    );
    let caught: unknown;
    try {
      machine.claim('step', 'wait');
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({
      code: ErrorCode.NON_DETERMINISM,
      message: expect.stringContaining(
        "operation 0 was timer 'wait' in the log but the flow asked for 'wait'",
      ),
      fields: { executionId, expected: 'wait', actual: 'wait' },
    });
    // The flow swallowed it and returned: the execution fails with the broken rule all the same.
    expect(machine.returned('fine')).toMatchObject({
      type: EventType.executionFailed,
      outcome: { status: 'failed', error: { code: ErrorCode.NON_DETERMINISM } },
    });
    expect(() => machine.claim('step', 'next')).toThrow(caught as Error);
  });

  it('a flow that returns before the log ends is NON_DETERMINISM', () => {
    const machine = machineOver(
      folded([
        [EventType.stepStarted, { index: 0, name: 'a' }],
        [EventType.stepCompleted, { index: 0, name: 'a', result: 1 }],
      ]),
    );
    expect(machine.returned(null)).toMatchObject({
      type: EventType.executionFailed,
      outcome: {
        status: 'failed',
        error: {
          code: ErrorCode.NON_DETERMINISM,
          message: expect.stringContaining(
            "the log has operation 0 ('a') but the flow completed without asking for it",
          ),
        },
      },
    });
  });

  it('an output JSON cannot hold fails the execution with PAYLOAD_NOT_JSON, a clock giving NaN is refused before anything is queued', () => {
    const machine = machineOver(folded());
    expect(machine.returned({ at: Number.NaN })).toMatchObject({
      type: EventType.executionFailed,
      outcome: { status: 'failed', error: { code: ErrorCode.PAYLOAD_NOT_JSON } },
    });
    const other = machineOver(folded());
    expect(() => other.recordValue('now', () => Number.NaN)).toThrow(
      expect.objectContaining({ code: ErrorCode.PAYLOAD_NOT_JSON }),
    );
    expect(other.pending).toBe(false);
    expect(other.state.steps).toEqual([]);
  });

  it('the ending: cancel, continue-as-new and stop decide what operations throw and which terminal is written', () => {
    const cancelled = machineOver(folded());
    const error = cancelled.cancel('user asked');
    expect(error).toMatchObject({
      code: ErrorCode.EXECUTION_CANCELLED,
      fields: { executionId, reason: 'user asked' },
    });
    expect(cancelled.ending).toBe(true);
    expect(cancelled.cancel('again')).toBeUndefined();
    expect(() => cancelled.claim('step', 'a')).toThrow(error as LoomError);
    expect(cancelled.threw(error)).toMatchObject({
      type: EventType.executionCancelled,
      payload: { reason: 'user asked' },
    });

    const continued = machineOver(folded());
    continued.continueAs('ex-2');
    expect(continued.ending).toBe(false);
    expect(() => continued.patched('p')).toThrow(/ex-2/);
    expect(continued.returned(null)).toMatchObject({
      type: EventType.executionContinuedAsNew,
      outcome: { status: 'continued', successorId: 'ex-2' },
    });

    const stopped = machineOver(folded());
    const lost = new LoomError(ErrorCode.OWNERSHIP_LOST, 'lease lost');
    expect(stopped.stop(lost)).toBe(true);
    expect(stopped.stop(new LoomError(ErrorCode.OWNERSHIP_LOST, 'second'))).toBe(false);
    expect(stopped.stoppedBy).toBe(lost);
    expect(stopped.cancel('late')).toBeUndefined();
    expect(() => stopped.recordValue('random', () => 0.5)).toThrow(lost);
    // A stopped node writes nothing more: no terminal, whatever the flow did.
    expect(stopped.returned('x')).toBeUndefined();
    expect(stopped.threw(new Error('boom'))).toBeUndefined();
    expect(stopped.pending).toBe(false);
  });

  it('a journal failure becomes the reason to stop: a stale fence or a taken sequence is OWNERSHIP_LOST', () => {
    const machine = machineOver(folded());
    const fence = new LoomError(ErrorCode.FENCE_STALE, 'stale');
    expect(machine.stopReason(fence)).toMatchObject({
      code: ErrorCode.OWNERSHIP_LOST,
      cause: fence,
    });
    expect(machine.stopReason(new LoomError(ErrorCode.SEQUENCE_CONFLICT, 'taken')).code).toBe(
      ErrorCode.OWNERSHIP_LOST,
    );
    const store = new LoomError(ErrorCode.STORE_FAILURE, 'disk full');
    expect(machine.stopReason(store)).toBe(store);
    const plain = new Error('socket closed');
    expect(machine.stopReason(plain)).toMatchObject({
      code: ErrorCode.STORE_FAILURE,
      message: 'Error: socket closed',
      cause: plain,
    });
    // Once stopped, the first reason stays the reason.
    machine.stop(store);
    expect(machine.stopReason(fence)).toBe(store);
  });
  it('suspends at the end of a turn once a wait is blocked and nothing is in flight, with the earliest wake and the fewest signals seen', () => {
    const machine = machineOver(folded());
    machine.beginInFlight();
    machine.beginInFlight();
    expect(machine.othersInFlight).toBe(true);
    // A wait blocks while effects run: not yet.
    expect(machine.block(5_000, 9)).toBe(false);
    expect(machine.endOfTurn()).toBe(false);
    expect(machine.settleInFlight()).toBe(false);
    expect(machine.othersInFlight).toBe(false);
    expect(machine.block(2_000)).toBe(false);
    expect(machine.block(null, 4)).toBe(false);
    expect(machine.pending).toBe(false);
    // The last effect ends: the execution may suspend, and does at the end of the turn, once.
    expect(machine.settleInFlight()).toBe(true);
    expect(machine.suspending).toBe(false);
    expect(machine.endOfTurn()).toBe(true);
    expect(machine.endOfTurn()).toBe(false);
    expect(machine.suspending).toBe(true);
    expect(machine.wakeAtMs).toBe(2_000);
    expect(commandsOf(machine)).toEqual([
      {
        kind: 'append',
        type: EventType.executionSuspended,
        payload: { wakeAtMs: 2_000 },
        payloadText: undefined,
      },
      { kind: 'status', status: 'suspended', wakeAtMs: 2_000, wakeOnSignalsAfter: 4 },
    ]);
    // Suspending: the flow's further calls record nothing, and a cancel comes too late here.
    expect(machine.recordValue('now', () => 77)).toBe(77);
    expect(machine.patched('p')).toBe(true);
    expect(machine.cancel('late')).toBeUndefined();
    expect(machine.pending).toBe(false);
  });

  it('a blocked wait alone suspends with no wake time and no signal guard; an ending execution does not suspend', () => {
    const timers = machineOver(folded());
    expect(timers.block(null)).toBe(true);
    expect(timers.endOfTurn()).toBe(true);
    expect(commandsOf(timers).at(-1)).toEqual({
      kind: 'status',
      status: 'suspended',
      wakeAtMs: null,
      wakeOnSignalsAfter: undefined,
    });

    const cancelled = machineOver(folded());
    expect(cancelled.block(1_000)).toBe(true);
    cancelled.cancel('stop');
    expect(cancelled.endOfTurn()).toBe(false);
    const stopped = machineOver(folded());
    stopped.block(1_000);
    stopped.stop(new LoomError(ErrorCode.OWNERSHIP_LOST, 'lost'));
    expect(stopped.endOfTurn()).toBe(false);
    expect(cancelled.pending || stopped.pending).toBe(false);
    expect(cancelled.suspending || stopped.suspending).toBe(false);
  });
});

describe("ExecutionMachine: a step's records", () => {
  const retry = { attempts: 3, retryable: undefined, delayMs: (failed: number) => failed * 100 };

  it('a step that fails once and then returns: what is queued, folded, is the state kept, and a replay answers from it', () => {
    const live = machineOver(folded(), true);
    const claim = live.claim('step', 'charge');
    stepStarted(live, claim, 'idempotent');
    expect(nextAttempt(live, claim)).toBe(1);
    expect(attemptThrew(live, claim, 1, new Error('503'), retry, true, 1_000)).toBeUndefined();
    expect(live.state.steps[0]).toMatchObject({ attempts: 1, retryAtMs: 1_100 });
    // The retry's attempt is journaled as started before it runs.
    expect(nextAttempt(live, claim)).toBe(2);
    expect(effectReturned(live, claim, { id: 'ch_1' }, 2)).toEqual({ id: 'ch_1' });
    const appended = drained(live);
    expect(appended.map(([type]) => type)).toEqual([
      EventType.stepStarted,
      EventType.stepAttemptFailed,
      EventType.stepAttemptStarted,
      EventType.stepCompleted,
    ]);
    expect(appended[0]?.[1]).toEqual({ index: 0, name: 'charge', idempotent: true });
    expect(appended[1]?.[1]).toMatchObject({
      attempt: 1,
      retryAtMs: 1_100,
      error: { message: '503' },
    });

    const state = folded(appended);
    expect(state.steps).toEqual(live.state.steps);
    const replay = machineOver(state);
    expect(replayStep(replay, replay.claim('step', 'charge'))).toEqual({ id: 'ch_1' });
    expect(replay.pending).toBe(false);
  });

  it('a step fails when the policy has no attempt left, when the user said no, or without a policy; the replay throws the same STEP_FAILED', () => {
    const live = machineOver(folded());
    const noPolicy = live.claim('step', 'a');
    stepStarted(live, noPolicy, undefined);
    const failed = attemptThrew(live, noPolicy, 1, new Error('boom'), undefined, false, 0);
    expect(failed).toMatchObject({
      code: ErrorCode.STEP_FAILED,
      fields: { step: 'a', stepIndex: 0, attempts: 1 },
    });
    const spent = live.claim('step', 'b');
    stepStarted(live, spent, undefined);
    expect(attemptThrew(live, spent, 3, new Error('again'), retry, true, 0)).toMatchObject({
      fields: { attempts: 3 },
    });
    const refused = live.claim('step', 'c');
    stepStarted(live, refused, undefined);
    expect(attemptThrew(live, refused, 1, new Error('400'), retry, false, 0)).toMatchObject({
      fields: { attempts: 1 },
    });
    const appended = drained(live);
    expect(appended.filter(([type]) => type === EventType.stepFailed)).toHaveLength(3);
    expect(appended.find(([type]) => type === EventType.stepAttemptFailed)).toBeUndefined();

    const replay = machineOver(folded(appended));
    // The same error as the live run's, but for the cause (the thrown value is not in the log).
    const { message, fields } = failed as LoomError;
    expect(() => replayStep(replay, replay.claim('step', 'a'))).toThrow(
      expect.objectContaining({ message, fields }),
    );
    expect(() => replayStep(replay, replay.claim('step', 'b'))).toThrow(
      expect.objectContaining({ message: expect.stringContaining('failed after 3 attempts') }),
    );
  });

  it('a result the log cannot hold fails the step durably; an outcome beside another running effect asks for a write this turn', () => {
    const live = machineOver(folded());
    const claim = live.claim('step', 'odd');
    stepStarted(live, claim, undefined);
    expect(() => effectReturned(live, claim, { at: Number.NaN }, undefined)).toThrow(
      expect.objectContaining({ code: ErrorCode.STEP_FAILED }),
    );
    expect(live.state.steps[0]).toMatchObject({
      status: 'failed',
      error: { code: 'PAYLOAD_NOT_JSON' },
    });
    expect(commandsOf(live).map((command) => command.kind)).toEqual(['append', 'append']);

    // Two effects in flight: the first to end queues its outcome and a write this turn.
    const first = live.claim('step', 'first');
    const second = live.claim('step', 'second');
    stepStarted(live, first, undefined);
    stepStarted(live, second, undefined);
    live.beginInFlight();
    live.beginInFlight();
    commandsOf(live);
    effectReturned(live, first, 1, undefined);
    expect(commandsOf(live).map((command) => command.kind)).toEqual(['append', 'flushSoon']);
    live.settleInFlight();
    // The last one alone waits for the next barrier: no write of its own.
    effectReturned(live, second, 2, undefined);
    expect(commandsOf(live).map((command) => command.kind)).toEqual(['append']);
  });

  it('an attempt cut by a crash is counted; past stepInterruptionsMax the step is poison and fails', () => {
    let log: [string, JsonValue][] = [[EventType.stepStarted, { index: 0, name: 'crashy' }]];
    for (const interruptions of [1, 2]) {
      const again = machineOver(folded(log));
      const claim = again.claim('step', 'crashy');
      expect(claim.recorded?.status).toBe('started');
      expect(stepInterrupted(again, claim)).toBeUndefined();
      const appended = drained(again);
      expect(appended).toEqual([
        [EventType.stepInterrupted, { index: 0, name: 'crashy', interruptions }],
      ]);
      log = [...log, ...appended];
    }
    const last = machineOver(folded(log));
    const poisoned = stepInterrupted(last, last.claim('step', 'crashy'));
    expect(poisoned).toMatchObject({
      code: ErrorCode.STEP_FAILED,
      fields: { error: { code: ErrorCode.STEP_POISONED } },
    });
    expect(drained(last).map(([type]) => type)).toEqual([EventType.stepFailed]);
  });

  it("a transaction's completion is handed to the store, not queued; once committed the state has it", () => {
    const live = machineOver(folded(), true);
    const claim = live.claim('step', 'tx');
    stepStarted(live, claim, 'transactional');
    drained(live);
    const completed = transactionCompleted(live, claim, { rows: 2 });
    expect(completed).toEqual({
      type: EventType.stepCompleted,
      payload: { index: 0, name: 'tx', result: { rows: 2 } },
      payloadText: '{"index":0,"name":"tx","result":{"rows":2}}',
    });
    expect(live.pending).toBe(false);
    stepCommitted(live, claim, completed.payloadText);
    expect(live.state.steps[0]).toEqual({ name: 'tx', status: 'completed', result: { rows: 2 } });
    expect(() => transactionCompleted(live, claim, 10n)).toThrow(
      expect.objectContaining({ code: ErrorCode.PAYLOAD_NOT_JSON }),
    );
  });
});

describe("ExecutionMachine: a wait's records", () => {
  const signal = (signalId: number, name: string, at: number, payload: JsonValue = signalId) =>
    ({ executionId, signalId, name, payload, idempotencyKey: null, at }) satisfies StoredSignal;

  it('a timer is due ms after now, recorded once; a replay finds the logged time and its firing', () => {
    const live = machineOver(folded());
    const nap = live.claim('timer', 'nap');
    expect(timerDue(live, nap, undefined, 5_000, 1_000)).toBe(6_000);
    const until = live.claim('timer', 'until');
    expect(timerDue(live, until, 9_000, undefined, 1_000)).toBe(9_000);
    timerFired(live, nap);
    const appended = drained(live);
    expect(appended).toEqual([
      [EventType.timerScheduled, { index: 0, name: 'nap', wakeAtMs: 6_000 }],
      [EventType.timerScheduled, { index: 1, name: 'until', wakeAtMs: 9_000 }],
      [EventType.timerFired, { index: 0, name: 'nap' }],
    ]);
    const state = folded(appended);
    expect(state.steps).toEqual(live.state.steps);
    const replay = machineOver(state);
    expect(replay.claim('timer', 'nap').recorded?.status).toBe('completed');
    // Later, on another clock: the logged time, not a new one.
    expect(timerDue(replay, replay.claim('timer', 'until'), 9_000, undefined, 50_000)).toBe(9_000);
    expect(replay.pending).toBe(false);
  });

  it('a time that is not whole milliseconds within 100 years is INVALID_ARGUMENT, and nothing is recorded', () => {
    const live = machineOver(folded());
    const century = 100 * 365 * 24 * 3_600_000;
    for (const [atMs, ms] of [
      [undefined, -1],
      [undefined, 1.5],
      [undefined, century + 1],
      [undefined, Number.NaN],
      [-5, undefined],
      [1_000 + century + 1, undefined],
    ] as const) {
      expect(() =>
        timerDue(live, live.claim('timer', `t${live.state.steps.length}`), atMs, ms, 1_000),
      ).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    }
    expect(() => signalTimeoutAt(live, live.claim('signal', 's'), -1, 0)).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
    );
    expect(live.pending).toBe(false);
  });

  it('parallel waits take different signals of their name, never one the log says was taken', () => {
    const live = machineOver(folded());
    const inbox = new SignalInbox([1]);
    inbox.add([
      signal(1, 'go', 10),
      signal(2, 'go', 20),
      signal(3, 'other', 30),
      signal(4, 'go', 40),
    ]);
    // Added again by a later read: kept once.
    inbox.add([signal(4, 'go', 40)]);
    expect(inbox.read.map((read) => read.signalId)).toEqual([1, 2, 3, 4]);
    expect(inbox.newestSeen).toBe(4);
    const first = live.claim('signal', 'go');
    const second = live.claim('signal', 'go');
    signalTimeoutAt(live, first, undefined, 0);
    signalTimeoutAt(live, second, undefined, 0);
    expect(signalOutcome(live, inbox, first, null, 100)).toEqual({
      received: true,
      payload: 2,
      signalId: 2,
    });
    expect(signalOutcome(live, inbox, second, null, 100)).toMatchObject({ signalId: 4 });
    const third = live.claim('signal', 'go');
    signalTimeoutAt(live, third, undefined, 0);
    // Nothing left for it and no deadline: it blocks.
    expect(signalOutcome(live, inbox, third, null, 100)).toBeUndefined();

    const appended = drained(live);
    const state = folded(appended);
    expect(state.consumedSignals).toEqual([2, 4]);
    expect(state.steps.slice(0, 2)).toEqual(live.state.steps.slice(0, 2));
    const replay = machineOver(state, true);
    expect(replaySignal(replay, replay.claim('signal', 'go'))).toEqual({
      received: true,
      payload: 2,
      signalId: 2,
    });
  });

  it('a signal that came at or after the deadline times the wait out and stays for a later wait; a clock past the deadline times it out too', () => {
    const live = machineOver(folded());
    const inbox = new SignalInbox([]);
    inbox.add([signal(7, 'reply', 2_000, { ok: true })]);
    const waiting = live.claim('signal', 'reply');
    expect(signalTimeoutAt(live, waiting, 1_000, 1_000)).toBe(2_000);
    // This node's clock says 1,500: the signal's arrival proves the deadline passed anyway.
    expect(signalOutcome(live, inbox, waiting, 2_000, 1_500)).toEqual({ received: false });
    const later = live.claim('signal', 'reply');
    signalTimeoutAt(live, later, undefined, 3_000);
    expect(signalOutcome(live, inbox, later, null, 3_000)).toMatchObject({ signalId: 7 });

    const clockPast = live.claim('signal', 'never');
    signalTimeoutAt(live, clockPast, 10, 4_000);
    expect(signalOutcome(live, inbox, clockPast, 4_010, 4_009)).toBeUndefined();
    expect(signalOutcome(live, inbox, clockPast, 4_010, 4_010)).toEqual({ received: false });

    const appended = drained(live);
    expect(appended.filter(([type]) => type === EventType.signalTimedOut)).toEqual([
      [EventType.signalTimedOut, { index: 0, name: 'reply', lateSignalId: 7 }],
      [EventType.signalTimedOut, { index: 2, name: 'never' }],
    ]);
    const replay = machineOver(folded(appended));
    expect(replaySignal(replay, replay.claim('signal', 'reply'))).toEqual({ received: false });
  });
});
