/** Median, min and max of a set of repeats: how every figure in the tables is reported. */
export interface Summary {
  median: number;
  min: number;
  max: number;
}

/** The middle value (mean of the two middle ones for an even count). Throws on an empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of an empty list: a cell ran no repeats');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Median with min..max over repeats. Throws on an empty list. */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new Error('summary of an empty list: a cell ran no repeats');
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return { median: median(values), min, max };
}

/**
 * The nearest-rank percentile (p in 0..100) of latencies: the smallest value with at least p% of
 * the values at or below it. `sorted` must be ascending (see {@link sortedCopy}).
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) throw new Error('percentile of an empty list: a cell ran no operations');
  if (!(p >= 0 && p <= 100)) throw new Error(`percentile must be within 0..100, got ${p}`);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

/** An ascending copy of latencies, as a typed array (fast to sort, no boxing). */
export function sortedCopy(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values).sort();
}

/** p50, p99 and max of one cell's latencies in milliseconds. */
export interface LatencyMs {
  p50: number;
  p99: number;
  max: number;
}

export function latencies(values: ArrayLike<number>): LatencyMs {
  const sorted = sortedCopy(values);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] as number,
  };
}
