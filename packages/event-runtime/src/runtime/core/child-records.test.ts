import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../errors.js';
import { childEnded, childIdOf, childStarted, replayChild, successorOf } from './child-records.js';
import { EventType } from './kernel-events.js';
import { drained, executionId, folded, machineOver } from './machine-script.test-support.js';

describe("a child's records", () => {
  it('a child started and completed: its id, its records, and a replay that answers from them', () => {
    const live = machineOver(folded(), true);
    const first = live.claim('child', 'pay');
    expect(childIdOf(first, undefined, executionId)).toBe('ex-1.0');
    expect(childStarted(live, first, 'ex-1.0', { amount: 5 })).toEqual({ amount: 5 });
    const named = live.claim('child', 'ship');
    expect(childIdOf(named, 'ship-42', executionId)).toBe('ship-42');
    childStarted(live, named, 'ship-42', undefined);
    expect(
      childEnded(live, first, 'ex-1.0', { status: 'completed', output: { paid: true } }),
    ).toEqual({
      ok: true,
      output: { paid: true },
    });
    const cancelled = childEnded(live, named, 'ship-42', {
      status: 'cancelled',
      reason: 'no stock',
    });
    expect(cancelled).toMatchObject({
      ok: false,
      error: { code: ErrorCode.CHILD_FAILED, fields: { childId: 'ship-42', status: 'cancelled' } },
    });
    const appended = drained(live);
    expect(appended.map(([type]) => type)).toEqual([
      EventType.childStarted,
      EventType.childStarted,
      EventType.childCompleted,
      EventType.childCompleted,
    ]);
    const state = folded(appended);
    expect(state.steps).toEqual(live.state.steps);

    const replay = machineOver(state);
    const again = replay.claim('child', 'pay');
    // The logged id wins over whatever the flow asks for now.
    expect(childIdOf(again, 'other', executionId)).toBe('ex-1.0');
    expect(replayChild(replay, again)).toEqual({ paid: true });
    expect(() => replayChild(replay, replay.claim('child', 'ship'))).toThrow(
      expect.objectContaining({
        code: ErrorCode.CHILD_FAILED,
        message: expect.stringContaining('was cancelled: no stock'),
      }),
    );
    expect(replay.pending).toBe(false);
  });

  it('a child input JSON cannot hold is refused before anything is recorded; a child output too big for this log fails the child here', () => {
    const live = machineOver(folded());
    const claim = live.claim('child', 'bad');
    expect(() => childStarted(live, claim, 'ex-1.0', { at: Number.NaN })).toThrow(
      expect.objectContaining({ code: ErrorCode.PAYLOAD_NOT_JSON }),
    );
    expect(live.pending).toBe(false);
    const big = live.claim('child', 'big');
    childStarted(live, big, 'ex-1.1', null);
    drained(live);
    const ended = childEnded(live, big, 'ex-1.1', {
      status: 'completed',
      output: 'x'.repeat(2 ** 21),
    });
    expect(ended).toMatchObject({ ok: false, error: { code: ErrorCode.CHILD_FAILED } });
    const [recorded] = drained(live);
    expect(recorded?.[1]).toMatchObject({
      childId: 'ex-1.1',
      status: 'failed',
      error: { code: ErrorCode.LIMIT_EXCEEDED },
    });
  });

  it("a continue-as-new: the next generation's id and the checked input, nothing recorded", () => {
    const live = machineOver(folded());
    expect(successorOf(live, { page: 2 })).toEqual({ successorId: 'ex-1#1', input: { page: 2 } });
    expect(successorOf(live, undefined).input).toBeNull();
    expect(() => successorOf(live, { n: 10n })).toThrow(
      expect.objectContaining({ code: ErrorCode.PAYLOAD_NOT_JSON }),
    );
    expect(live.pending).toBe(false);
  });
});
