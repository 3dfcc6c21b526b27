import { describe, expect, it } from 'vitest';
import type { TimelineEntry } from '../run-detail.js';
import { waitingFor } from './waiting-for.js';

const entry = (fields: Partial<TimelineEntry> & Pick<TimelineEntry, 'kind' | 'name'>) =>
  ({
    index: 0,
    status: 'open',
    startedAtMs: 0,
    endedAtMs: null,
    durationMs: null,
    sequence: 1,
    failedAttempts: 0,
    interruptions: 0,
    ...fields,
  }) as TimelineEntry;

describe('waitingFor', () => {
  it('names each open wait of a suspended run: approval, answer, signal (until its timeout), timer, child', () => {
    const timeline = [
      entry({ kind: 'step', name: 'prepare', status: 'completed' }),
      entry({ kind: 'wait', name: 'approval:1.0', dueAtMs: null }),
      entry({ kind: 'wait', name: 'answer:2.1' }),
      entry({ kind: 'wait', name: 'go', dueAtMs: Date.UTC(2026, 11, 6, 12) }),
      entry({ kind: 'sleep', name: 'nap', dueAtMs: Date.UTC(2026, 11, 7) }),
      entry({ kind: 'child', name: 'kid', childId: 'run-1.4' }),
      entry({ kind: 'wait', name: 'done', status: 'timed_out' }),
    ];
    expect(waitingFor('run-1', 'suspended', timeline)).toBe(
      "approval run-1~1.0, answer run-1~2.1, signal 'go' until 2026-12-06T12:00:00.000Z, " +
        'timer 2026-12-07T00:00:00.000Z, child run-1.4',
    );
  });

  it('nothing for a run that is not suspended, or whose log shows no open wait', () => {
    const open = [entry({ kind: 'wait', name: 'go' })];
    expect(waitingFor('r', 'running', open)).toBeUndefined();
    expect(waitingFor('r', 'completed', open)).toBeUndefined();
    expect(waitingFor('r', 'suspended', [entry({ kind: 'step', name: 'x' })])).toBeUndefined();
  });
});
