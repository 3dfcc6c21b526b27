// The kill campaign's time-to-recover bookkeeping, on hand-made kills (no processes): an owned
// execution with no event after its kill made the p99 `Infinity`; it is now counted apart.
import { describe, expect, it } from 'vitest';
import { percentile, recoveryOf, recoveryTimes } from './kill-campaign.js';

const killAt = 10_000;
const kill = (owned: string[]) => ({ slot: 0, atMs: killAt, owned });

describe('kill campaign recovery', () => {
  it('times a kill by the last owned execution to append after it', () => {
    const record = recoveryOf(
      kill(['a', 'b']),
      new Map([
        ['a', killAt + 300],
        ['b', killAt + 1_200],
      ]),
      new Map(),
    );
    expect(record).toMatchObject({ owned: 2, recoverMs: 1_200, slowest: 'b' });
    expect(record.endedAtKill).toEqual([]);
    expect(record.notRecovered).toEqual([]);
  });

  it('an owned execution whose terminal event was stamped before the kill ended at the kill: not a time', () => {
    // Its last write was in flight at the kill and landed after the look at what was owned.
    const record = recoveryOf(
      kill(['a', 'b']),
      new Map([['a', killAt + 500]]),
      new Map([['b', killAt - 3]]),
    );
    expect(record).toMatchObject({ recoverMs: 500, slowest: 'a', endedAtKill: ['b'] });
    const alone = recoveryOf(kill(['b']), new Map(), new Map([['b', killAt - 3]]));
    expect(alone).toMatchObject({ recoverMs: 0, endedAtKill: ['b'], notRecovered: [] });
    // Nothing was left to recover: the kill is no time for the percentiles.
    expect(recoveryTimes([alone])).toEqual([]);
  });

  it('an owned execution with no event after the kill that did not end before it is not recovered: counted apart, no Infinity', () => {
    const lost = recoveryOf(kill(['a', 'c']), new Map([['a', killAt + 40]]), new Map());
    expect(lost).toMatchObject({ recoverMs: null, notRecovered: ['c'] });
    const fine = recoveryOf(kill(['a']), new Map([['a', killAt + 40]]), new Map());
    const idle = recoveryOf(kill([]), new Map(), new Map());
    const times = recoveryTimes([lost, fine, idle]);
    expect(times).toEqual([40]);
    expect(percentile(times, 99)).toBe(40);
  });

  it('an owned execution that had no event before the kill was not started yet: not a time', () => {
    // The worker died between an eager start's lease and its execution.started; the restarted
    // worker started it 10 s later, which is not how long recovery took.
    const record = recoveryOf(
      kill(['a', 'n']),
      new Map([
        ['a', killAt + 300],
        ['n', killAt + 10_000],
      ]),
      new Map(),
      new Map([
        ['a', killAt - 50],
        ['n', killAt + 10_000],
      ]),
    );
    expect(record).toMatchObject({ recoverMs: 300, slowest: 'a', notStarted: ['n'] });
    const only = recoveryOf(kill(['n']), new Map([['n', killAt + 10_000]]), new Map(), new Map());
    expect(only).toMatchObject({ recoverMs: 0, notStarted: ['n'], notRecovered: [] });
    expect(recoveryTimes([record, only])).toEqual([300]);
  });

  it('percentile is the nearest rank, 0 for none, and refuses a value that is not finite', () => {
    expect(percentile([], 99)).toBe(0);
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([5, 1, 3, 2, 4], 99)).toBe(5);
    expect(() => percentile([1, Number.POSITIVE_INFINITY], 99)).toThrow(/non-finite/);
  });
});
