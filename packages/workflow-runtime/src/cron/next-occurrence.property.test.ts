import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { naiveNextOccurrence } from '../../test/naive-cron-scan.js';
import { isLoomError } from '../errors.js';
import { nextOccurrence } from './next-occurrence.js';
import { occurrences } from './occurrences.js';
import { parseCron } from './parse-cron.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const ZONES = ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe'] as const;

// The 2024 DST transitions of the zones above, where the gap and repeat rules matter.
const TRANSITIONS_MS = [
  '2024-03-10T07:00:00Z',
  '2024-11-03T06:00:00Z',
  '2024-03-31T01:00:00Z',
  '2024-10-27T01:00:00Z',
  '2024-04-06T15:00:00Z',
  '2024-10-05T15:30:00Z',
].map(Date.parse);

const int = (min: number, max: number) => fc.integer({ min, max });
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/** `*`, n, a-b, *\/k, a-b\/k, a\/k, or a short list of those, over [min, max]. */
function plainField(min: number, max: number, names?: readonly string[], nameBase = 0) {
  const value = names
    ? fc.oneof(
        int(min, max).map(String),
        int(0, names.length - 1).map((i) => names[i]!),
      )
    : int(min, max).map(String);
  const ordered = fc
    .tuple(int(min, max), int(min, max))
    .map(([a, b]) => [Math.min(a, b), Math.max(a, b)]);
  const rangeText = ordered.map(([a, b]) =>
    names && a! - nameBase >= 0 && b! - nameBase < names.length
      ? `${names[a! - nameBase]}-${names[b! - nameBase]}`
      : `${a}-${b}`,
  );
  const item = fc.oneof(
    value,
    rangeText,
    fc.tuple(rangeText, int(1, 5)).map(([r, k]) => `${r}/${k}`),
    fc.tuple(int(min, max), int(1, 9)).map(([a, k]) => `${a}/${k}`),
    int(1, 12).map((k) => `*/${k}`),
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant('*') },
    { weight: 4, arbitrary: item },
    {
      weight: 2,
      arbitrary: fc.array(item, { minLength: 2, maxLength: 3 }).map((items) => items.join(',')),
    },
  );
}

const dayOfMonthItem = fc.oneof(
  int(1, 31).map(String),
  fc.constant('L'),
  fc.constant('LW'),
  int(1, 31).map((n) => `${n}W`),
  fc.tuple(int(1, 31), int(1, 31)).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
);
const dayOfMonth = fc.oneof(
  { weight: 6, arbitrary: fc.constant('*') },
  { weight: 1, arbitrary: fc.constant('?') },
  { weight: 1, arbitrary: int(2, 10).map((k) => `*/${k}`) },
  {
    weight: 3,
    arbitrary: fc.array(dayOfMonthItem, { minLength: 1, maxLength: 3 }).map((i) => i.join(',')),
  },
);
const weekday = fc.oneof(
  int(0, 7).map(String),
  int(0, 6).map((i) => WEEKDAYS[i]!),
);
const dayOfWeekItem = fc.oneof(
  weekday,
  fc.tuple(int(0, 7), int(0, 7)).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
  weekday.map((w) => `${w}L`),
  fc.tuple(weekday, int(1, 5)).map(([w, n]) => `${w}#${n}`),
);
const dayOfWeek = fc.oneof(
  { weight: 6, arbitrary: fc.constant('*') },
  { weight: 1, arbitrary: fc.constant('?') },
  {
    weight: 3,
    arbitrary: fc.array(dayOfWeekItem, { minLength: 1, maxLength: 3 }).map((i) => i.join(',')),
  },
);
const month = fc.oneof(
  { weight: 4, arbitrary: fc.constant('*') },
  { weight: 1, arbitrary: plainField(1, 12, MONTHS, 1) },
);

const fiveFields = fc
  .tuple(plainField(0, 59), plainField(0, 23), dayOfMonth, month, dayOfWeek)
  .map((fields) => fields.join(' '));
const sixFields = fc
  .tuple(plainField(0, 59), plainField(0, 59), fc.oneof(fc.constant('*'), plainField(0, 23)))
  .map(([second, minute, hour]) => `${second} ${minute} ${hour} * * *`);

/** An instant in 2023-2026, half of them within hours of a DST transition, with odd seconds. */
const after = fc.oneof(
  int(Date.parse('2023-01-01T00:00:00Z') / 1000, Date.parse('2026-12-31T00:00:00Z') / 1000).map(
    (s) => s * 1000,
  ),
  fc
    .tuple(fc.constantFrom(...TRANSITIONS_MS), int(-6 * 3600, 2 * 3600), int(0, 999))
    .map(([transition, seconds, ms]) => transition + seconds * 1000 + ms),
);

function agreesWithScan(expression: string, afterMs: number, zone: string, horizonMs: number) {
  const expected = naiveNextOccurrence(expression, afterMs, zone, horizonMs);
  let actual: number;
  try {
    actual = nextOccurrence(parseCron(expression), afterMs, zone);
  } catch (error) {
    // Only a schedule the scan also never saw fire may be reported as never firing.
    if (isLoomError(error, 'CRON_NEVER_FIRES') && expected === undefined) return;
    throw error;
  }
  const context = `${expression} after ${new Date(afterMs).toISOString()} in ${zone}`;
  if (expected === undefined) expect(actual, context).toBeGreaterThan(afterMs + horizonMs);
  else expect(new Date(actual).toISOString(), context).toBe(new Date(expected).toISOString());
}

describe('nextOccurrence agrees with the naive scan on random schedules (fast-check)', () => {
  it('5-field expressions, within 45 days, in four zones', () => {
    fc.assert(
      fc.property(fiveFields, after, fc.constantFrom(...ZONES), (expression, afterMs, zone) => {
        agreesWithScan(expression, afterMs, zone, 45 * DAY_MS);
      }),
      { numRuns: 300 },
    );
  });

  it('6-field expressions (seconds), within 6 hours, in four zones', () => {
    fc.assert(
      fc.property(sixFields, after, fc.constantFrom(...ZONES), (expression, afterMs, zone) => {
        agreesWithScan(expression, afterMs, zone, 6 * HOUR_MS);
      }),
      { numRuns: 40 },
    );
  });

  it('parseCron on arbitrary text either parses or throws INVALID_CRON', () => {
    const token = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom(
        '*',
        '?',
        'L',
        'LW',
        '#',
        '/',
        '-',
        ',',
        'MON',
        'JAN',
        '5L',
        '15W',
        '*/5',
        '1-5',
      ),
    );
    fc.assert(
      fc.property(fc.array(token, { minLength: 0, maxLength: 7 }), (tokens) => {
        const expression = tokens.join(' ');
        try {
          parseCron(expression);
        } catch (error) {
          expect(isLoomError(error, 'INVALID_CRON'), String(error)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('cron properties on random input (fast-check, issue 14)', () => {
  it('occurrences of a valid schedule are strictly increasing, after `after`, and each next follows the one before', () => {
    fc.assert(
      fc.property(fiveFields, after, fc.constantFrom(...ZONES), (expression, afterMs, zone) => {
        let fires: number[];
        try {
          fires = occurrences(expression, afterMs, zone, 4);
        } catch (error) {
          expect(isLoomError(error, 'CRON_NEVER_FIRES'), String(error)).toBe(true);
          return;
        }
        expect(fires).toHaveLength(4);
        expect(fires[0]).toBeGreaterThan(afterMs);
        for (let index = 1; index < fires.length; index++) {
          expect(fires[index]).toBeGreaterThan(fires[index - 1] as number);
          expect(nextOccurrence(expression, fires[index - 1] as number, zone)).toBe(fires[index]);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('any text or non-text (unicode, NUL, lone surrogates, 1,000 characters) parses or is a LoomError', () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 1000 }),
      fc.constantFrom('\u0000', '\uD800 * * * *', '* * * * * * *', '*/0 * * * *', '0-999 * * * *'),
      fc.anything(),
    );
    fc.assert(
      fc.property(hostile, fc.constantFrom('UTC', 'Nowhere/City', '\uD800'), (input, zone) => {
        try {
          nextOccurrence(input as string, Date.parse('2024-01-01T00:00:00Z'), zone);
        } catch (error) {
          expect(isLoomError(error), String(error)).toBe(true);
          expect([
            'INVALID_CRON',
            'CRON_NEVER_FIRES',
            'INVALID_TIME_ZONE',
            'INVALID_ARGUMENT',
          ]).toContain((error as { code: string }).code);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
