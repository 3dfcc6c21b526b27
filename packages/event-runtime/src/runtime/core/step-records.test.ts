import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../envelope.js';
import { ErrorCode, type LoomError } from '../../errors.js';
import { EventType } from './kernel-events.js';
import { commandsOf, drained, folded, machineOver } from './machine-script.test-support.js';
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

describe("a step's records", () => {
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
