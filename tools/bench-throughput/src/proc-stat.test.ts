import { describe, expect, it } from 'vitest';
import {
  busyMsBetween,
  busyShareBetween,
  parseProcessStat,
  parseProcStat,
  processBusyMsBetween,
} from './proc-stat.js';

const sample = `cpu  99749 10 25173 182483 2359 3 1601 4859 7 0
cpu0 49000 5 12000 91000 1100 1 800 2400 0 0
cpu1 50749 5 13173 91483 1259 2 801 2459 7 0
intr 123456 0 0
ctxt 987654
`;

describe('/proc/stat parsing', () => {
  it('reads the aggregate cpu line: busy = user + nice + system + irq + softirq', () => {
    const jiffies = parseProcStat(sample);
    expect(jiffies.busy).toBe(99749 + 10 + 25173 + 3 + 1601);
    expect(jiffies.total).toBe(jiffies.busy + 182483 + 2359 + 4859);
  });

  it('ignores per-core lines even when they come first', () => {
    const reordered = `cpu0 1 1 1 1 1 1 1 1 0 0\n${sample}`;
    expect(parseProcStat(reordered)).toEqual(parseProcStat(sample));
  });

  it('accepts old kernels without steal and guest fields', () => {
    expect(parseProcStat('cpu 10 0 5 100 1 0 2\n')).toEqual({ busy: 17, total: 118 });
  });

  it('refuses text without an aggregate line or with garbage in it', () => {
    expect(() => parseProcStat('cpu0 1 2 3 4 5 6 7\n')).toThrow(/no aggregate/);
    expect(() => parseProcStat('cpu 1 2 x 4 5 6 7\n')).toThrow(/unexpected fields/);
  });

  it('turns jiffy deltas into busy milliseconds (10 ms each) and a busy share', () => {
    const before = { busy: 1000, total: 4000 };
    const after = { busy: 1150, total: 4200 };
    expect(busyMsBetween(before, after)).toBe(1500);
    expect(busyShareBetween(before, after)).toBe(0.75);
    expect(busyShareBetween(before, before)).toBe(0);
  });
});

describe('/proc/<pid>/stat parsing', () => {
  it('reads utime + stime, counting fields after the last parenthesis', () => {
    const line =
      '4242 (postgres: 15/main: root test 127.0.0.1(45614) idle) S 1 4242 4242 0 -1 4194560 512 0 0 0 123 45 0 0 20 0 1 0 100 220556 7535 18446744073709551615';
    expect(parseProcessStat(line)).toEqual({
      comm: 'postgres: 15/main: root test 127.0.0.1(45614) idle',
      jiffies: 168,
    });
  });

  it('refuses a line without a command name', () => {
    expect(() => parseProcessStat('garbage')).toThrow(/not a/);
  });

  it('sums per-process deltas; a process born in between counts from zero', () => {
    const before = new Map([
      [1, 100],
      [2, 50],
    ]);
    const after = new Map([
      [1, 130],
      [2, 50],
      [3, 7],
    ]);
    expect(processBusyMsBetween(before, after)).toBe((30 + 7) * 10);
  });
});
