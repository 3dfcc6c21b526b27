import { describe, expect, it } from 'vitest';
import { naiveNextOccurrence } from '../../test/naive-cron-scan.js';
import { isLoomError, type LoomError, WorkflowErrorCode } from '../errors.js';
import { CronLimits } from './cron-limits.js';
import { nextOccurrence } from './next-occurrence.js';
import { occurrences } from './occurrences.js';
import { parseCron } from './parse-cron.js';
import type { ParsedCron } from './parsed-cron.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const DAY_MS = 86_400_000;

function thrown(work: () => unknown): LoomError {
  try {
    work();
  } catch (error) {
    if (isLoomError(error)) return error;
    throw error;
  }
  throw new Error('expected a LoomError, but nothing was thrown');
}

/** Hand-checked: [expression, after, zone, the fire times that follow, in order]. */
type Fixture = readonly [string, string, string, readonly string[]];

describe('nextOccurrence, hand-checked in UTC', () => {
  it.each<Fixture>([
    // Feb 29 jumps to the next leap year, and 2100 is not one.
    [
      '0 0 29 2 *',
      '2024-03-01T00:00:00Z',
      'UTC',
      ['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z'],
    ],
    ['0 0 29 2 *', '2096-03-01T00:00:00Z', 'UTC', ['2104-02-29T00:00:00.000Z']],
    // Feb 29 on a Monday (the 5th Monday of February): 2072, then 40 years to 2112.
    ['0 0 * 2 MON#5', '2072-03-01T00:00:00Z', 'UTC', ['2112-02-29T00:00:00.000Z']],
    // Last weekday: Aug 31 2024 is a Saturday, Mar 31 2024 a Sunday.
    [
      '0 0 LW * *',
      '2024-08-01T00:00:00Z',
      'UTC',
      ['2024-08-30T00:00:00.000Z', '2024-09-30T00:00:00.000Z'],
    ],
    [
      '0 0 LW * *',
      '2024-03-01T00:00:00Z',
      'UTC',
      ['2024-03-29T00:00:00.000Z', '2024-04-30T00:00:00.000Z'],
    ],
    [
      '0 0 L * *',
      '2024-01-15T00:00:00Z',
      'UTC',
      [
        '2024-01-31T00:00:00.000Z',
        '2024-02-29T00:00:00.000Z',
        '2024-03-31T00:00:00.000Z',
        '2024-04-30T00:00:00.000Z',
      ],
    ],
    // Nearest weekday: Jun 1 2024 is a Saturday (→ Mon 3rd), Sep 15 2024 a Sunday (→ Mon 16th),
    // Mar 31 2024 a Sunday and the last day (→ Fri 29th); 31W skips 30-day months.
    [
      '0 12 1W * *',
      '2024-05-15T00:00:00Z',
      'UTC',
      ['2024-06-03T12:00:00.000Z', '2024-07-01T12:00:00.000Z'],
    ],
    [
      '0 12 15W * *',
      '2024-09-01T00:00:00Z',
      'UTC',
      ['2024-09-16T12:00:00.000Z', '2024-10-15T12:00:00.000Z'],
    ],
    [
      '0 12 31W * *',
      '2024-03-01T00:00:00Z',
      'UTC',
      ['2024-03-29T12:00:00.000Z', '2024-05-31T12:00:00.000Z'],
    ],
    // Fifth Friday: not in Jan or Feb 2024; Mar 29, May 31, Aug 30.
    [
      '0 0 * * FRI#5',
      '2024-01-01T00:00:00Z',
      'UTC',
      ['2024-03-29T00:00:00.000Z', '2024-05-31T00:00:00.000Z', '2024-08-30T00:00:00.000Z'],
    ],
    [
      '0 0 * * 5L',
      '2024-02-01T00:00:00Z',
      'UTC',
      ['2024-02-23T00:00:00.000Z', '2024-03-29T00:00:00.000Z'],
    ],
    [
      '0 8 ? * MON#1',
      '2024-01-02T00:00:00Z',
      'UTC',
      ['2024-02-05T08:00:00.000Z', '2024-03-04T08:00:00.000Z'],
    ],
    // Vixie OR: the 1st, the 15th and every Monday (Feb 12 and 19 2024 are Mondays).
    [
      '0 0 1,15 * MON',
      '2024-02-13T00:00:00Z',
      'UTC',
      [
        '2024-02-15T00:00:00.000Z',
        '2024-02-19T00:00:00.000Z',
        '2024-02-26T00:00:00.000Z',
        '2024-03-01T00:00:00.000Z',
      ],
    ],
    // Vixie AND for a stepped wildcard: odd-numbered Mondays (Jan 2024: 1, 15, 29).
    [
      '0 0 */2 * MON',
      '2024-01-02T00:00:00Z',
      'UTC',
      ['2024-01-15T00:00:00.000Z', '2024-01-29T00:00:00.000Z'],
    ],
    // Business hours jump the weekend: Fri Mar 8 2024 18:00 → Mon 09:00.
    [
      '0 9 * * MON-FRI',
      '2024-03-08T18:00:00Z',
      'UTC',
      ['2024-03-11T09:00:00.000Z', '2024-03-12T09:00:00.000Z'],
    ],
    // Strictly after, to the millisecond.
    ['* * * * *', '2024-01-01T00:00:00.000Z', 'UTC', ['2024-01-01T00:01:00.000Z']],
    ['* * * * *', '2024-01-01T00:00:59.999Z', 'UTC', ['2024-01-01T00:01:00.000Z']],
    ['59 23 31 12 *', '2024-12-31T23:59:00Z', 'UTC', ['2025-12-31T23:59:00.000Z']],
    [
      '*/15 * * * * *',
      '2024-01-01T00:00:14.500Z',
      'UTC',
      ['2024-01-01T00:00:15.000Z', '2024-01-01T00:00:30.000Z'],
    ],
    ['30 59 23 31 12 *', '2024-06-01T00:00:00Z', 'UTC', ['2024-12-31T23:59:30.000Z']],
    ['@yearly', '2024-01-01T00:00:00Z', 'UTC', ['2025-01-01T00:00:00.000Z']],
    ['@weekly', '2024-01-01T00:00:00Z', 'UTC', ['2024-01-07T00:00:00.000Z']],
    // Before 1970 and into the far future work the same.
    ['0 0 29 2 *', '1899-01-01T00:00:00Z', 'UTC', ['1904-02-29T00:00:00.000Z']],
    ['0 0 1 1 *', '9999-06-01T00:00:00Z', 'UTC', ['+010000-01-01T00:00:00.000Z']],
  ])('%s after %s in %s', (expression, after, zone, expected) => {
    expect(occurrences(expression, at(after), zone, expected.length).map(iso)).toEqual(expected);
  });
});

describe('nextOccurrence across DST, hand-checked', () => {
  it.each<Fixture>([
    // New York 2024: 02:00 EST → 03:00 EDT on Mar 10 (07:00Z); 02:00 EDT → 01:00 EST on Nov 3 (06:00Z).
    // 02:30 does not exist on Mar 10: it fires at the first instant after the gap, 03:00 EDT.
    [
      '30 2 * * *',
      '2024-03-09T12:00:00Z',
      'America/New_York',
      ['2024-03-10T07:00:00.000Z', '2024-03-11T06:30:00.000Z'],
    ],
    // 03:00 exists, and the gap's first instant is the same one: one fire.
    [
      '0 3 * * *',
      '2024-03-09T12:00:00Z',
      'America/New_York',
      ['2024-03-10T07:00:00.000Z', '2024-03-11T07:00:00.000Z'],
    ],
    // Hourly across the gap: 01:00 EST, then 03:00 EDT (02:00 fires there), then 04:00 EDT.
    [
      '0 * * * *',
      '2024-03-10T05:30:00Z',
      'America/New_York',
      ['2024-03-10T06:00:00.000Z', '2024-03-10T07:00:00.000Z', '2024-03-10T08:00:00.000Z'],
    ],
    // 01:30 happens twice on Nov 3: it fires at the first (EDT) only.
    [
      '30 1 * * *',
      '2024-11-02T12:00:00Z',
      'America/New_York',
      ['2024-11-03T05:30:00.000Z', '2024-11-04T06:30:00.000Z'],
    ],
    // Asked from inside the repeated hour (01:10 EST), 01:45 has already fired (at 01:45 EDT).
    ['45 1 * * *', '2024-11-03T06:10:00Z', 'America/New_York', ['2024-11-04T06:45:00.000Z']],
    // Every 20 minutes pauses for the repeated hour: 01:40 EDT, then 02:00 EST.
    [
      '*/20 * * * *',
      '2024-11-03T05:30:00Z',
      'America/New_York',
      ['2024-11-03T05:40:00.000Z', '2024-11-03T07:00:00.000Z', '2024-11-03T07:20:00.000Z'],
    ],
    ['*/20 * * * *', '2024-11-03T06:10:00Z', 'America/New_York', ['2024-11-03T07:00:00.000Z']],
    // Weekdays 09:00 from Friday evening: Monday 09:00 EDT, the first weekday after DST began.
    ['0 9 * * MON-FRI', '2024-03-08T23:00:00Z', 'America/New_York', ['2024-03-11T13:00:00.000Z']],
    // Berlin 2024: 02:00 CET → 03:00 CEST on Mar 31 (01:00Z); 03:00 CEST → 02:00 CET on Oct 27 (01:00Z).
    [
      '30 2 * * *',
      '2024-03-30T12:00:00Z',
      'Europe/Berlin',
      ['2024-03-31T01:00:00.000Z', '2024-04-01T00:30:00.000Z'],
    ],
    [
      '30 2 * * *',
      '2024-10-26T12:00:00Z',
      'Europe/Berlin',
      ['2024-10-27T00:30:00.000Z', '2024-10-28T01:30:00.000Z'],
    ],
    ['15 2 * * *', '2024-10-27T01:05:00Z', 'Europe/Berlin', ['2024-10-28T01:15:00.000Z']],
    [
      '0 0 L * *',
      '2024-02-15T00:00:00Z',
      'Europe/Berlin',
      ['2024-02-28T23:00:00.000Z', '2024-03-30T23:00:00.000Z'],
    ],
    // Lord Howe moves 30 minutes. Apr 7 2024: 02:00 +11 → 01:30 +10:30 (15:00Z), so
    // 01:30-02:00 repeats; Oct 6 2024: 02:00 +10:30 → 02:30 +11 (15:30Z), so 02:00-02:30 is skipped.
    [
      '45 1 * * *',
      '2024-04-06T12:00:00Z',
      'Australia/Lord_Howe',
      ['2024-04-06T14:45:00.000Z', '2024-04-07T15:15:00.000Z'],
    ],
    [
      '*/15 * * * *',
      '2024-04-06T14:40:00Z',
      'Australia/Lord_Howe',
      ['2024-04-06T14:45:00.000Z', '2024-04-06T15:30:00.000Z', '2024-04-06T15:45:00.000Z'],
    ],
    [
      '15 2 * * *',
      '2024-10-05T12:00:00Z',
      'Australia/Lord_Howe',
      ['2024-10-05T15:30:00.000Z', '2024-10-06T15:15:00.000Z'],
    ],
    [
      '*/15 * * * *',
      '2024-10-05T15:10:00Z',
      'Australia/Lord_Howe',
      ['2024-10-05T15:15:00.000Z', '2024-10-05T15:30:00.000Z', '2024-10-05T15:45:00.000Z'],
    ],
  ])('%s after %s in %s', (expression, after, zone, expected) => {
    expect(occurrences(expression, at(after), zone, expected.length).map(iso)).toEqual(expected);
  });

  it('fires a 6-field schedule once per second of a repeated wall time, at the first pass', () => {
    // From 01:59:58 EDT, 01:59:59 EDT fires, then the repeat (01:00:00-01:59:59 EST) is skipped.
    const fires = occurrences('* * * * * *', at('2024-11-03T05:59:58Z'), 'America/New_York', 3);
    expect(fires.map(iso)).toEqual([
      '2024-11-03T05:59:59.000Z',
      '2024-11-03T07:00:00.000Z',
      '2024-11-03T07:00:01.000Z',
    ]);
  });
});

/**
 * Expected values from the naive minute-by-minute scan in test/naive-cron-scan.ts. Each row:
 * expression and how far ahead the scan looks (days); the scan must find a fire in that span.
 */
const ORACLE_EXPRESSIONS: readonly (readonly [string, number])[] = [
  ['* * * * *', 2],
  ['*/7 * * * *', 2],
  ['0 * * * *', 2],
  ['30 2 * * *', 3],
  ['0 0 * * *', 3],
  ['15 1 * * *', 3],
  ['45 1 * * *', 3],
  ['*/30 1-3 * * *', 3],
  ['0 2-3 * * *', 3],
  ['0 9 * * MON-FRI', 5],
  ['0 22 * * 7', 9],
  ['0 0 1 * *', 35],
  ['0 0 L * *', 35],
  ['0 0 LW * *', 35],
  ['0 12 15W * *', 35],
  ['0 12 1W,LW * *', 35],
  ['0 0 * * FRI#5', 130],
  ['0 0 * * 5L', 40],
  ['0 0 1,15 * MON', 9],
  ['0 0 */2 * MON', 30],
  ['0 0 ? * SUN', 9],
  ['0 0 13 * FRI', 9],
  ['0 6 * JAN-MAR/2 SAT,SUN', 310],
  ['@hourly', 2],
  ['@daily', 2],
  ['@weekly', 9],
  ['@monthly', 35],
];
const ORACLE_INSTANTS = [
  '2023-12-31T23:59:30Z',
  '2024-02-28T23:00:00Z',
  '2024-03-09T20:00:00Z', // before New York springs forward
  '2024-03-30T20:00:00Z', // before Berlin springs forward
  '2024-04-06T14:20:00Z', // inside Lord Howe's last DST hour
  '2024-10-05T12:00:00Z', // before Lord Howe springs forward
  '2024-10-27T00:40:00Z', // inside Berlin's repeated hour
  '2024-11-03T06:20:00Z', // inside New York's repeated hour
];
const ZONES = ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe'];

describe('nextOccurrence agrees with the naive minute-by-minute scan', () => {
  describe.each(ZONES)('in %s', (zone) => {
    it.each(ORACLE_EXPRESSIONS)('%s', (expression, horizonDays) => {
      const parsed = parseCron(expression);
      for (const after of ORACLE_INSTANTS) {
        // Chain three fires, so each case also starts from a fire time.
        let afterMs = at(after);
        for (let i = 0; i < 3; i++) {
          const expected = naiveNextOccurrence(expression, afterMs, zone, horizonDays * DAY_MS);
          if (expected === undefined)
            throw new Error(
              `the scan found no fire of ${expression} within ${horizonDays} days after ${iso(afterMs)} in ${zone}`,
            );
          const actual = nextOccurrence(parsed, afterMs, zone);
          expect(iso(actual), `${expression} after ${iso(afterMs)} in ${zone}`).toBe(iso(expected));
          afterMs = actual;
        }
      }
    });
  });
});

describe('nextOccurrence inputs', () => {
  it('takes a Date, epoch ms, a string or a ParsedCron alike', () => {
    const after = at('2024-05-05T10:00:00Z');
    const expected = at('2024-05-06T09:00:00Z');
    expect(nextOccurrence('0 9 * * MON-FRI', after)).toBe(expected);
    expect(nextOccurrence('0 9 * * MON-FRI', new Date(after))).toBe(expected);
    expect(nextOccurrence(parseCron('0 9 * * MON-FRI'), after, 'UTC')).toBe(expected);
  });

  it('treats UTC aliases (Etc/UTC, GMT) as UTC', () => {
    const after = at('2024-05-05T10:00:00Z');
    for (const zone of ['Etc/UTC', 'GMT', 'Etc/GMT']) {
      expect(nextOccurrence('30 12 * * *', after, zone)).toBe(at('2024-05-05T12:30:00Z'));
    }
  });

  it('re-parses a ParsedCron it did not make from its expression', () => {
    const copy: ParsedCron = { ...parseCron('0 9 * * MON-FRI') };
    expect(nextOccurrence(copy, at('2024-05-05T10:00:00Z'))).toBe(at('2024-05-06T09:00:00Z'));
    const forged = { ...copy, expression: '0 0 32 * *' };
    expect(thrown(() => nextOccurrence(forged, 0)).code).toBe(WorkflowErrorCode.INVALID_CRON);
  });

  it.each(['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 0 30W 2 *', '0 0 30,31 2 *'])(
    'throws CRON_NEVER_FIRES for %s after a bounded search',
    (expression) => {
      const error = thrown(() =>
        nextOccurrence(expression, at('2024-01-01T00:00:00Z'), 'Europe/Berlin'),
      );
      expect(error.code).toBe(WorkflowErrorCode.CRON_NEVER_FIRES);
      expect(error.fields).toMatchObject({
        expression,
        timeZone: 'Europe/Berlin',
        limit: 'searchYearsMax',
      });
      expect(error.message).toContain(`${CronLimits.searchYearsMax} years`);
    },
  );

  it('throws INVALID_CRON for a bad expression', () => {
    const error = thrown(() => nextOccurrence('0 0 32 * *', 0));
    expect(error.code).toBe(WorkflowErrorCode.INVALID_CRON);
    expect(error.fields).toMatchObject({ field: 'day-of-month', token: '32' });
    expect(error.message).toContain('day-of-month 32 is out of range 1-31');
  });

  it.each(['Mars/Olympus_Mons', '', 'EST5EDT,M3.2.0', 'utc+1'])(
    'throws INVALID_TIME_ZONE for %j',
    (zone) => {
      const error = thrown(() => nextOccurrence('* * * * *', 0, zone));
      expect(error.code).toBe(WorkflowErrorCode.INVALID_TIME_ZONE);
      expect(error.fields.timeZone).toBe(zone);
    },
  );

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['an invalid Date', new Date('not a date')],
    ['a string', '2024-01-01' as unknown as number],
    ['year 10000', at('+010000-01-01T00:00:00Z')],
    ['year 0', at('0000-12-31T00:00:00Z')],
  ])('throws INVALID_ARGUMENT for after = %s', (_, after) => {
    expect(thrown(() => nextOccurrence('* * * * *', after)).code).toBe(
      WorkflowErrorCode.INVALID_ARGUMENT,
    );
  });
});

describe('occurrences', () => {
  it('returns count fire times, each strictly after the one before', () => {
    const fires = occurrences('*/10 * * * *', at('2024-01-01T00:05:00Z'), undefined, 4);
    expect(fires.map(iso)).toEqual([
      '2024-01-01T00:10:00.000Z',
      '2024-01-01T00:20:00.000Z',
      '2024-01-01T00:30:00.000Z',
      '2024-01-01T00:40:00.000Z',
    ]);
    expect(occurrences('*/10 * * * *', 0, 'UTC', 0)).toEqual([]);
  });

  it.each([-1, 1.5, Number.NaN, CronLimits.occurrencesCountMax + 1])(
    'throws INVALID_ARGUMENT for count = %s',
    (count) => {
      const error = thrown(() => occurrences('* * * * *', 0, 'UTC', count));
      expect(error.code).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
      expect(error.fields.limit).toBe('occurrencesCountMax');
    },
  );
});
