import { describe, expect, it } from 'vitest';
import type { JsonValue, StoredSignal } from '../../envelope.js';
import { ErrorCode } from '../../errors.js';
import { EventType } from './kernel-events.js';
import { drained, executionId, folded, machineOver } from './machine-script.test-support.js';
import {
  replaySignal,
  signalOutcome,
  signalTimeoutAt,
  timerDue,
  timerFired,
} from './wait-records.js';

describe("a wait's records", () => {
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
    // The log took signal 1 already (operation 0).
    const live = machineOver(
      folded([
        [EventType.signalWaiting, { index: 0, name: 'early', timeoutAtMs: null }],
        [EventType.signalReceived, { index: 0, name: 'early', signalId: 1, payload: 1 }],
      ]),
    );
    expect(replaySignal(live, live.claim('signal', 'early'))).toMatchObject({ signalId: 1 });
    const inbox = live.inbox;
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
    expect(signalOutcome(live, first, null, 100)).toEqual({
      received: true,
      payload: 2,
      signalId: 2,
    });
    expect(signalOutcome(live, second, null, 100)).toMatchObject({ signalId: 4 });
    const third = live.claim('signal', 'go');
    signalTimeoutAt(live, third, undefined, 0);
    // Nothing left for it and no deadline: it blocks.
    expect(signalOutcome(live, third, null, 100)).toBeUndefined();

    const appended = drained(live);
    const state = folded([
      [EventType.signalWaiting, { index: 0, name: 'early', timeoutAtMs: null }],
      [EventType.signalReceived, { index: 0, name: 'early', signalId: 1, payload: 1 }],
      ...appended,
    ]);
    expect(state.consumedSignals).toEqual([1, 2, 4]);
    expect(state.steps.slice(0, 3)).toEqual(live.state.steps.slice(0, 3));
    const replay = machineOver(state, true);
    replay.claim('signal', 'early');
    expect(replaySignal(replay, replay.claim('signal', 'go'))).toEqual({
      received: true,
      payload: 2,
      signalId: 2,
    });
  });

  it('a signal that came at or after the deadline times the wait out and stays for a later wait; a clock past the deadline times it out too', () => {
    const live = machineOver(folded());
    live.inbox.add([signal(7, 'reply', 2_000, { ok: true })]);
    const waiting = live.claim('signal', 'reply');
    expect(signalTimeoutAt(live, waiting, 1_000, 1_000)).toBe(2_000);
    // This node's clock says 1,500: the signal's arrival proves the deadline passed anyway.
    expect(signalOutcome(live, waiting, 2_000, 1_500)).toEqual({ received: false });
    const later = live.claim('signal', 'reply');
    signalTimeoutAt(live, later, undefined, 3_000);
    expect(signalOutcome(live, later, null, 3_000)).toMatchObject({ signalId: 7 });

    const clockPast = live.claim('signal', 'never');
    signalTimeoutAt(live, clockPast, 10, 4_000);
    expect(signalOutcome(live, clockPast, 4_010, 4_009)).toBeUndefined();
    expect(signalOutcome(live, clockPast, 4_010, 4_010)).toEqual({ received: false });

    const appended = drained(live);
    expect(appended.filter(([type]) => type === EventType.signalTimedOut)).toEqual([
      [EventType.signalTimedOut, { index: 0, name: 'reply', lateSignalId: 7 }],
      [EventType.signalTimedOut, { index: 2, name: 'never' }],
    ]);
    const replay = machineOver(folded(appended));
    expect(replaySignal(replay, replay.claim('signal', 'reply'))).toEqual({ received: false });
  });
});
