import { bench, describe } from 'vitest';
import { minuteScan } from '../../bench/minute-scan.js';
import { nextOccurrence } from './next-occurrence.js';
import { parseCron } from './parse-cron.js';

// P17: field jumping against a minute-by-minute scan on sparse expressions. The side-by-side
// ratio with repeats and min..max comes from `pnpm bench:ratio` (bench/p17.ts); this file is
// the quick look. The scans are slow on purpose, so their benches run few iterations.
const CASES = [
  ['0 0 29 2 *', '2024-03-01T00:00:00Z', 'Feb 29, four years ahead'],
  ['0 9 * * MON-FRI', '2024-03-08T18:00:00Z', 'weekdays 09:00, from Friday evening'],
  ['0 0 LW * *', '2024-03-01T00:00:00Z', 'last weekday of the month'],
  ['0 0 * * FRI#5', '2024-05-31T00:00:01Z', 'fifth Friday, from just after one'],
] as const;

for (const [expression, after, what] of CASES) {
  const parsed = parseCron(expression);
  const afterMs = Date.parse(after);
  describe(`${expression} (${what})`, () => {
    bench('nextOccurrence, parsed, UTC', () => {
      nextOccurrence(parsed, afterMs);
    });
    bench('nextOccurrence, text, UTC', () => {
      nextOccurrence(expression, afterMs);
    });
    bench('nextOccurrence, parsed, Europe/Berlin', () => {
      nextOccurrence(parsed, afterMs, 'Europe/Berlin');
    });
    bench(
      'minute-by-minute scan, UTC',
      () => {
        minuteScan(parsed, afterMs);
      },
      { time: 300, iterations: 5 },
    );
  });
}

describe('parseCron', () => {
  bench('parseCron("0 9 * * MON-FRI")', () => {
    parseCron('0 9 * * MON-FRI');
  });
});
