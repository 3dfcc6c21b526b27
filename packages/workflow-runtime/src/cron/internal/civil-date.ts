/** Milliseconds in a civil day (wall-clock days have no leap seconds). */
export const DAY_MS = 86_400_000;

/**
 * Days from 1970-01-01 to a proleptic-Gregorian date (month 1-12), for any year. Howard
 * Hinnant's `days_from_civil`: pure integer arithmetic, so it has none of `Date.UTC`'s
 * quirks (years 0-99 mapped to 1900-1999) and allocates nothing.
 */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra =
    yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** A proleptic-Gregorian date. */
export interface CivilDate {
  year: number;
  month: number;
  day: number;
}

/** The inverse of {@link daysFromCivil} (Hinnant's `civil_from_days`). */
export function civilFromDays(days: number): CivilDate {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  );
  const dayOfYear =
    dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return { year, month, day: dayOfYear - Math.floor((153 * mp + 2) / 5) + 1 };
}

/** True for Gregorian leap years. */
export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

const MONTH_LENGTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

/** Days in a month (1-12) of a year: 28 to 31. */
export function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : MONTH_LENGTHS[month - 1]!;
}

/** Day of the week of a day number from {@link daysFromCivil}: 0 = Sunday … 6 = Saturday. */
export function weekdayOfDays(days: number): number {
  // 1970-01-01 was a Thursday.
  return (((days + 4) % 7) + 7) % 7;
}
