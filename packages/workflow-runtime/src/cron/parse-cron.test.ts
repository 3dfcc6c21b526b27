import { describe, expect, it } from 'vitest';
import { isLoomError, type LoomError, WorkflowErrorCode } from '../errors.js';
import { CronLimits } from './cron-limits.js';
import { parseCron } from './parse-cron.js';

function parseError(expression: string): LoomError {
  try {
    parseCron(expression);
  } catch (error) {
    if (isLoomError(error)) return error;
    throw error;
  }
  throw new Error(`"${expression}" parsed, but it should not`);
}

const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('parseCron', () => {
  it('reads a 5-field expression into typed, sorted, de-duplicated lists', () => {
    const parsed = parseCron('5,1,1-3 */6 1-10/3 JAN,mar-May/2 MON-FRI');
    expect(parsed).toEqual({
      expression: '5,1,1-3 */6 1-10/3 JAN,mar-May/2 MON-FRI',
      hasSeconds: false,
      seconds: [0],
      minutes: [1, 2, 3, 5],
      hours: [0, 6, 12, 18],
      daysOfMonth: {
        wildcard: false,
        days: [1, 4, 7, 10],
        lastDay: false,
        lastWeekday: false,
        nearestWeekdays: [],
      },
      months: [1, 3, 5],
      daysOfWeek: { wildcard: false, weekdays: [1, 2, 3, 4, 5], lastOfMonth: [], nthOfMonth: [] },
      dayCombination: 'or',
    });
  });

  it('reads a 6-field expression with seconds first', () => {
    const parsed = parseCron('*/15 0 12 * * *');
    expect(parsed.hasSeconds).toBe(true);
    expect(parsed.seconds).toEqual([0, 15, 30, 45]);
    expect(parsed.minutes).toEqual([0]);
    expect(parsed.hours).toEqual([12]);
  });

  it('reads n/step as n to the end of the field', () => {
    expect(parseCron('50/3 * * * *').minutes).toEqual([50, 53, 56, 59]);
    expect(parseCron('0 0 * * 1/2').daysOfWeek.weekdays).toEqual([1, 3, 5]);
  });

  it('reads weekday names that contain W or end in a name letter (WED, TUE-THU)', () => {
    expect(parseCron('0 0 * * WED,TUE-THU').daysOfWeek.weekdays).toEqual([2, 3, 4]);
    expect(parseCron('0 0 * * wed#2,WEDL').daysOfWeek).toMatchObject({
      lastOfMonth: [3],
      nthOfMonth: [{ weekday: 3, nth: 2 }],
    });
  });

  it('reads 7 as Sunday, and * in day-of-week as 0-6', () => {
    expect(parseCron('0 0 * * 7').daysOfWeek.weekdays).toEqual([0]);
    expect(parseCron('0 0 * * 5-7').daysOfWeek.weekdays).toEqual([0, 5, 6]);
    expect(parseCron('0 0 * * */2').daysOfWeek.weekdays).toEqual([0, 2, 4, 6]);
    expect(parseCron('0 0 * * SUN-SAT').daysOfWeek.weekdays).toEqual(range(0, 6));
  });

  it('reads L, LW and nW in day-of-month', () => {
    expect(parseCron('0 0 L,LW,15W,1W,3 * *').daysOfMonth).toEqual({
      wildcard: false,
      days: [3],
      lastDay: true,
      lastWeekday: true,
      nearestWeekdays: [1, 15],
    });
  });

  it('reads nL and n#k in day-of-week, by number or name', () => {
    expect(parseCron('0 0 ? * 5L,FRI#2,mon#1,7#5').daysOfWeek).toEqual({
      wildcard: false,
      weekdays: [],
      lastOfMonth: [5],
      nthOfMonth: [
        { weekday: 0, nth: 5 },
        { weekday: 1, nth: 1 },
        { weekday: 5, nth: 2 },
      ],
    });
  });

  it('combines restricted day fields with OR and a wildcard one with AND, as Vixie cron does', () => {
    expect(parseCron('0 0 1,15 * MON').dayCombination).toBe('or');
    expect(parseCron('0 0 * * MON').dayCombination).toBe('and');
    expect(parseCron('0 0 1 * *').dayCombination).toBe('and');
    // Vixie looks at the first character: a stepped wildcard is still a wildcard.
    expect(parseCron('0 0 */2 * MON').dayCombination).toBe('and');
    expect(parseCron('0 0 ? * MON').dayCombination).toBe('and');
    expect(parseCron('0 0 ? * MON').daysOfMonth.days).toEqual(range(1, 31));
  });

  it.each([
    ['@yearly', '0 0 1 1 *'],
    ['@annually', '0 0 1 1 *'],
    ['@monthly', '0 0 1 * *'],
    ['@weekly', '0 0 * * 0'],
    ['@daily', '0 0 * * *'],
    ['@midnight', '0 0 * * *'],
    ['@hourly', '0 * * * *'],
    ['@DAILY', '0 0 * * *'],
  ])('expands the alias %s to %s', (alias, expanded) => {
    const { expression, ...fromAlias } = parseCron(alias);
    const { expression: _, ...fromFields } = parseCron(expanded);
    expect(expression).toBe(alias);
    expect(fromAlias).toEqual(fromFields);
  });

  it('accepts any case and surrounding or repeated whitespace', () => {
    const { expression, ...parsed } = parseCron('  0  9\t* *   mon-fri ');
    expect(expression).toBe('0  9\t* *   mon-fri');
    expect(parsed.daysOfWeek.weekdays).toEqual([1, 2, 3, 4, 5]);
  });

  it('returns frozen data', () => {
    const parsed = parseCron('0 0 * * *');
    expect(Object.isFrozen(parsed)).toBe(true);
    expect(Object.isFrozen(parsed.minutes)).toBe(true);
    expect(Object.isFrozen(parsed.daysOfWeek.nthOfMonth)).toBe(true);
  });
});

describe('parseCron rejects bad expressions with INVALID_CRON naming the field and the reason', () => {
  it.each([
    ['', undefined, 'the expression is empty'],
    [
      '* * * *',
      undefined,
      'expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got 4',
    ],
    ['* * * * * * *', undefined, 'got 7'],
    ['60 * * * *', 'minute', 'minute 60 is out of range 0-59'],
    ['* 24 * * *', 'hour', 'hour 24 is out of range 0-23'],
    ['* * 0 * *', 'day-of-month', 'day-of-month 0 is out of range 1-31'],
    ['0 0 32 * *', 'day-of-month', 'day-of-month 32 is out of range 1-31'],
    ['* * * 13 *', 'month', 'month 13 is out of range 1-12'],
    ['* * * * 8', 'day-of-week', 'day-of-week 8 is out of range 0-7'],
    ['60 * * * * *', 'second', 'second 60 is out of range 0-59'],
    ['* * * JANUARY *', 'month', "month 'JANUARY' is not a number or a name (JAN-DEC)"],
    ['* * * * MON-FOO', 'day-of-week', "day-of-week 'FOO' is not a number or a name (SUN-SAT)"],
    ['MON * * * *', 'minute', "minute 'MON' is not a number"],
    ['1.5 * * * *', 'minute', "minute '1.5' is not a number"],
    ['-1 * * * *', 'minute', 'minute has an empty value'],
    ['*/0 * * * *', 'minute', "minute step '0' in '*/0' must be a whole number from 1 to 60"],
    ['*/61 * * * *', 'minute', "minute step '61' in '*/61' must be a whole number from 1 to 60"],
    ['* */x * * *', 'hour', "hour step 'x' in '*/x' must be a whole number from 1 to 24"],
    ['5-1 * * * *', 'minute', 'minute range 5-1 runs backwards'],
    ['0 0 * * FRI-MON', 'day-of-week', 'day-of-week range FRI-MON runs backwards'],
    ['1-2-3 * * * *', 'minute', "minute range '1-2-3' must be written start-end"],
    ['1/2/3 * * * *', 'minute', "minute '1/2/3' has more than one '/'"],
    ['1,,2 * * * *', 'minute', "minute list '1,,2' has an empty item"],
    ['1, * * * *', 'minute', "minute list '1,' has an empty item"],
    [
      'L * * * *',
      'minute',
      "minute 'L': 'L', 'W', '#' and '?' are only allowed in day-of-month and day-of-week",
    ],
    ['? * * * *', 'minute', "'?' are only allowed in day-of-month and day-of-week"],
    ['* * * 1#2 *', 'month', "'#' and '?' are only allowed"],
    ['0 0 * * L', 'day-of-week', "day-of-week 'L' alone is ambiguous"],
    ['0 0 * * MON#0', 'day-of-week', "the occurrence after '#' must be 1 to 5, got '0'"],
    ['0 0 * * MON#6', 'day-of-week', "the occurrence after '#' must be 1 to 5, got '6'"],
    ['0 0 * * MON#', 'day-of-week', "got ''"],
    ['0 0 * * 8L', 'day-of-week', 'day-of-week 8 is out of range 0-7'],
    ['0 0 * * 5W', 'day-of-week', "'W' belongs in day-of-month"],
    ['0 0 * * FRI#2#3', 'day-of-week', 'day-of-week takes nL'],
    ['0 0 * * #2', 'day-of-week', 'day-of-week takes nL'],
    ['0 0 1#2 * *', 'day-of-month', "'#' belongs in day-of-week"],
    ['0 0 5L * *', 'day-of-month', 'day-of-month takes L (last day), LW (last weekday) and nW'],
    ['0 0 L-3 * *', 'day-of-month', 'day-of-month takes L'],
    ['0 0 0W * *', 'day-of-month', 'day-of-month 0 is out of range 1-31'],
    ['0 0 32W * *', 'day-of-month', 'day-of-month 32 is out of range 1-31'],
    ['0 0 1,? * *', 'day-of-month', "'?' must be the whole field"],
    ['@reboot', undefined, '@reboot means "at startup"'],
    ['@often', undefined, 'unknown alias @often'],
  ])('%j', (expression, field, reason) => {
    const error = parseError(expression);
    expect(error.code).toBe(WorkflowErrorCode.INVALID_CRON);
    expect(error.name).toBe('LoomError');
    expect(error.fields.field).toBe(field);
    expect(error.fields.expression).toBe(expression.trim());
    expect(error.fields.reason).toContain(reason);
    expect(error.message).toContain(reason);
    expect(error.message).toContain(`"${expression.trim()}"`);
  });

  it('rejects an expression past the length limit, naming the limit', () => {
    const error = parseError(`0 0 ${'1,'.repeat(CronLimits.expressionLengthMax)}1 * *`);
    expect(error.code).toBe(WorkflowErrorCode.INVALID_CRON);
    expect(error.fields.limit).toBe('expressionLengthMax');
  });

  it('rejects a value that is not a string', () => {
    expect(() => parseCron(42 as unknown as string)).toThrow(
      expect.objectContaining({
        code: 'INVALID_CRON',
        message: expect.stringContaining('expected a string, got number'),
      }),
    );
  });
});
