import { describe, expect, it } from 'vitest';
import { type LazyPair, lazySummaryLine, overhead } from './lease-suite.js';

const label = (shape: string) => (shape === 'io' ? 'io 20 ms' : 'no-op');

describe('lease-suite summary', () => {
  it('overhead is (off − mode) ÷ off: positive when the mode is slower', () => {
    expect(overhead(1000, 900)).toBeCloseTo(0.1);
    expect(overhead(1000, 1100)).toBeCloseTo(-0.1);
  });

  it('one line per backend: paired overhead median (min..max), per shape, lazy lease calls', () => {
    const pairs: LazyPair[] = [
      { shape: 'noop', lazy: 900, off: 1000, lazyLeaseCalls: 0 },
      { shape: 'noop', lazy: 1100, off: 1000, lazyLeaseCalls: 0 },
      { shape: 'noop', lazy: 1000, off: 1000, lazyLeaseCalls: 0 },
      { shape: 'io', lazy: 490, off: 500, lazyLeaseCalls: 2 },
    ];
    expect(lazySummaryLine('sqlite', pairs, label)).toBe(
      'P9 lazy vs off, sqlite FULL: overhead 1.0 % (-10.0 %..10.0 %) over 4 paired repeats; no-op 0.0 % (goal ≤ 5 %), io 20 ms 2.0 % (goal ≤ 2 %); lazy lease-store calls: 2',
    );
    expect(lazySummaryLine('memory', pairs.slice(3), label)).toBe(
      'P9 lazy vs off, memory: overhead 2.0 % (2.0 %..2.0 %) over 1 paired repeats; io 20 ms 2.0 %; lazy lease-store calls: 2',
    );
    expect(lazySummaryLine('postgres', [], label)).toBe(
      'P9 lazy vs off, postgres: no paired repeats ran',
    );
  });
});
