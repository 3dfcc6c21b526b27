import type { CronFieldName } from '../parsed-cron.js';

/** The bounds and names of one cron field. */
export interface CronFieldSpec {
  readonly name: CronFieldName;
  /** Smallest value a number may have. */
  readonly min: number;
  /** Largest value a number may have (7 for day-of-week, read as Sunday). */
  readonly max: number;
  /** Largest value `*` and `n/step` reach (6 for day-of-week: Sunday is 0, not 7). */
  readonly wildcardMax: number;
  /** Upper-case names and their values (JAN-DEC, SUN-SAT). */
  readonly names: ReadonlyMap<string, number> | undefined;
  /** How a name looks, for messages: "JAN-DEC". */
  readonly namesHint: string | undefined;
}

const MONTH_NAMES = [
  'JAN',
  'FEB',
  'MAR',
  'APR',
  'MAY',
  'JUN',
  'JUL',
  'AUG',
  'SEP',
  'OCT',
  'NOV',
  'DEC',
];
const WEEKDAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

function spec(
  name: CronFieldName,
  min: number,
  max: number,
  names?: readonly string[],
  firstNameValue = 0,
): CronFieldSpec {
  return {
    name,
    min,
    max,
    wildcardMax: name === 'day-of-week' ? 6 : max,
    names: names === undefined ? undefined : new Map(names.map((n, i) => [n, i + firstNameValue])),
    namesHint: names === undefined ? undefined : `${names[0]}-${names[names.length - 1]}`,
  };
}

/** The six fields in the order a 6-field expression writes them (5-field drops `second`). */
export const CronFieldSpecs = {
  second: spec('second', 0, 59),
  minute: spec('minute', 0, 59),
  hour: spec('hour', 0, 23),
  dayOfMonth: spec('day-of-month', 1, 31),
  month: spec('month', 1, 12, MONTH_NAMES, 1),
  dayOfWeek: spec('day-of-week', 0, 7, WEEKDAY_NAMES, 0),
} as const;
