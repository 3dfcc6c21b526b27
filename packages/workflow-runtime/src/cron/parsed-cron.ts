/** The name of one field of a cron expression, as error messages and `fields.field` spell it. */
export type CronFieldName = 'second' | 'minute' | 'hour' | 'day-of-month' | 'month' | 'day-of-week';

/** What the day-of-month field allows. Every list is sorted and free of duplicates. */
export interface CronDaysOfMonth {
  /**
   * True when the field starts with `*` (`*`, `*\/2`) or is `?`. Vixie cron's rule: a wildcard
   * day field ANDs with the other one, two restricted ones OR (see `ParsedCron.dayCombination`).
   */
  readonly wildcard: boolean;
  /** Plain days, 1-31. A day a month lacks (31 in April) is skipped in that month. */
  readonly days: readonly number[];
  /** `L`: the last day of the month. */
  readonly lastDay: boolean;
  /** `LW`: the last weekday (Monday-Friday) of the month. */
  readonly lastWeekday: boolean;
  /**
   * `nW`: the weekday nearest day n, within the month: a Saturday moves to Friday (to Monday
   * the 3rd for `1W`), a Sunday to Monday (to Friday for the month's last day). Months
   * shorter than n days have no match, as with a plain day n.
   */
  readonly nearestWeekdays: readonly number[];
}

/** An `n#k` item: the k-th (1-5) given weekday of the month. */
export interface CronNthWeekday {
  /** 0 = Sunday … 6 = Saturday. */
  readonly weekday: number;
  /** 1-5. A month without a 5th such weekday has no match. */
  readonly nth: number;
}

/** What the day-of-week field allows. 0 = Sunday … 6 = Saturday (7 is read as Sunday). */
export interface CronDaysOfWeek {
  /** True when the field starts with `*` or is `?` (see {@link CronDaysOfMonth.wildcard}). */
  readonly wildcard: boolean;
  /** Plain weekdays, 0-6. */
  readonly weekdays: readonly number[];
  /** `nL` (`5L`, `FRIL`): the last such weekday of the month. */
  readonly lastOfMonth: readonly number[];
  /** `n#k` (`FRI#2`): the k-th such weekday of the month. */
  readonly nthOfMonth: readonly CronNthWeekday[];
}

/**
 * A validated cron schedule, as `parseCron` returns it: plain, frozen data. Pass it to
 * `nextOccurrence` to skip parsing on every call.
 */
export interface ParsedCron {
  /** The expression as given, trimmed (an alias stays as written, e.g. `@daily`). */
  readonly expression: string;
  /** True for a 6-field expression (seconds first); a 5-field one fires at second 0. */
  readonly hasSeconds: boolean;
  /** 0-59. `[0]` for a 5-field expression. */
  readonly seconds: readonly number[];
  /** 0-59. */
  readonly minutes: readonly number[];
  /** 0-23. */
  readonly hours: readonly number[];
  readonly daysOfMonth: CronDaysOfMonth;
  /** 1-12. */
  readonly months: readonly number[];
  readonly daysOfWeek: CronDaysOfWeek;
  /**
   * How the two day fields combine, as in Vixie cron: `'or'` when both are restricted
   * (`0 0 1,15 * MON` fires on the 1st, the 15th and every Monday), `'and'` when either is a
   * wildcard (`0 0 * * MON` fires on Mondays; `0 0 *\/2 * MON` on odd-numbered Mondays).
   */
  readonly dayCombination: 'and' | 'or';
}
