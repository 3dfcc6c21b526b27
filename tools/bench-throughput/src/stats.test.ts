import { describe, expect, it } from 'vitest';
import { latencies, median, percentile, sortedCopy, summarize } from './stats.js';

describe('stats', () => {
  it('the median of an odd count is the middle value, of an even count the mean of the two', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
  });

  it('a summary is median with min..max, whatever the input order', () => {
    expect(summarize([30, 10, 20, 50, 40])).toEqual({ median: 30, min: 10, max: 50 });
  });

  it('an empty list is an error, not NaN in a table', () => {
    expect(() => median([])).toThrow(/empty/);
    expect(() => summarize([])).toThrow(/empty/);
    expect(() => percentile(new Float64Array(), 50)).toThrow(/empty/);
  });

  it('percentiles are nearest-rank', () => {
    const sorted = sortedCopy(Array.from({ length: 100 }, (_, index) => 100 - index));
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 99)).toBe(99);
    expect(percentile(sorted, 100)).toBe(100);
    expect(percentile(sorted, 0)).toBe(1);
    expect(percentile(sortedCopy([3, 1, 2]), 50)).toBe(2);
    expect(() => percentile(sorted, 101)).toThrow(/0\.\.100/);
  });

  it('sortedCopy sorts numerically, not as strings', () => {
    expect([...sortedCopy([10, 9, 100, 1])]).toEqual([1, 9, 10, 100]);
  });

  it('latencies gives p50, p99 and max of one cell', () => {
    const values = Array.from({ length: 1000 }, (_, index) => index + 1);
    expect(latencies(values)).toEqual({ p50: 500, p99: 990, max: 1000 });
  });
});
