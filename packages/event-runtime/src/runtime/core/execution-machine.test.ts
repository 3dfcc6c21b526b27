import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import { WaitDecision } from './execution-machine.js';
import { EventType } from './kernel-events.js';
import {
  commandsOf,
  drained,
  executionId,
  folded,
  machineOver,
} from './machine-script.test-support.js';

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

  it('a wait is due, armed (an armTimer, in flight until timerFired completes it) or blocks, against inlineWaitMs', () => {
    const machine = machineOver(folded());
    expect(machine.waitUntil(0, 1_000, 1_000)).toBe(WaitDecision.due);
    expect(machine.waitUntil(0, 2_001, 1_000)).toBe(WaitDecision.block);
    expect(commandsOf(machine)).toEqual([]);
    expect(machine.waitUntil(1, 2_000, 1_000)).toBe(WaitDecision.armed);
    expect(commandsOf(machine)).toEqual([{ kind: 'armTimer', op: 1, wakeAtMs: 2_000 }]);
    // Another wait blocks meanwhile: the armed timer is in flight, so the execution stays.
    expect(machine.block(9_000)).toBe(false);
    expect(machine.endOfTurn()).toBe(false);
    expect(machine.timerFired(1)).toBe(true);
    expect(commandsOf(machine)).toEqual([{ kind: 'complete', op: 1 }]);
    expect(machine.endOfTurn()).toBe(true);
    expect(commandsOf(machine).map((command) => command.kind)).toEqual(['append', 'status']);
  });
});
