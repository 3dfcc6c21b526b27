import { CronLimits } from '../cron-limits.js';
import type { ParsedCron } from '../parsed-cron.js';
import { daysFromCivil, daysInMonth, weekdayOfDays } from './civil-date.js';
import { parseExpression } from './parse-expression.js';

/**
 * A schedule in the form the search reads: for each time field, a table from a value to the
 * smallest allowed value at or above it (-1 when none), so moving to the next match is one
 * lookup; and the matching days of a month as a bit mask for each of the 28 shapes a month
 * can have (28-31 days × the weekday of its 1st), so a month is tested in one lookup too.
 */
export interface CompiledCron {
  readonly parsed: ParsedCron;
  /** Index 0-60; index 60 is -1. */
  readonly nextSecond: Int8Array;
  /** Index 0-60; index 60 is -1. */
  readonly nextMinute: Int8Array;
  /** Index 0-24; index 24 is -1. */
  readonly nextHour: Int8Array;
  /** Index 0-13; index 13 is -1. */
  readonly nextMonth: Int8Array;
  /** Bits 1-31 = matching days; index `(length - 28) * 7 + weekdayOfFirst`. */
  readonly dayMasks: Int32Array;
}

const compiledByParsed = new WeakMap<ParsedCron, CompiledCron>();
const compiledByText = new Map<string, CompiledCron>();

/**
 * The compiled form of a schedule. A string is parsed (`INVALID_CRON` on bad input) and the
 * result kept in a small cache (`CronLimits.expressionCacheMax` entries, oldest dropped
 * first), so a caller passing the same text on every tick parses it once. A `ParsedCron`
 * from `parseCron` is compiled once and remembered; any other object (a copy made by hand,
 * or by another installed copy of this package) is re-parsed from its `expression`, so
 * nothing unvalidated reaches the search.
 */
export function compiledCron(cron: string | ParsedCron): CompiledCron {
  if (typeof cron !== 'string') {
    return compiledByParsed.get(cron) ?? compileCron(parseExpression(cron?.expression));
  }
  const cached = compiledByText.get(cron);
  if (cached !== undefined) return cached;
  const fresh = compileCron(parseExpression(cron));
  if (compiledByText.size >= CronLimits.expressionCacheMax) {
    compiledByText.delete(compiledByText.keys().next().value!);
  }
  compiledByText.set(cron, fresh);
  return fresh;
}

/** Compiles a `ParsedCron` this module produced and remembers it for {@link compiledCron}. */
export function rememberCompiled(parsed: ParsedCron): ParsedCron {
  compiledByParsed.set(parsed, compileCron(parsed));
  return parsed;
}

function compileCron(parsed: ParsedCron): CompiledCron {
  const masks = dayFieldMasks(parsed);
  const dayMasks = new Int32Array(28);
  for (let length = 28; length <= 31; length++) {
    for (let weekdayOfFirst = 0; weekdayOfFirst < 7; weekdayOfFirst++) {
      dayMasks[(length - 28) * 7 + weekdayOfFirst] = dayMask(parsed, masks, length, weekdayOfFirst);
    }
  }
  return {
    parsed,
    nextSecond: nextTable(parsed.seconds, 60),
    nextMinute: nextTable(parsed.minutes, 60),
    nextHour: nextTable(parsed.hours, 24),
    nextMonth: nextTable(parsed.months, 13),
    dayMasks,
  };
}

/** The day mask (bits 1-31) of a month of `year` (month 1-12). */
export function monthDayMask(cron: CompiledCron, year: number, month: number): number {
  const weekdayOfFirst = weekdayOfDays(daysFromCivil(year, month, 1));
  return cron.dayMasks[(daysInMonth(year, month) - 28) * 7 + weekdayOfFirst]!;
}

function nextTable(values: readonly number[], end: number): Int8Array {
  const allowed = new Uint8Array(end + 1);
  for (const value of values) allowed[value] = 1;
  const table = new Int8Array(end + 1).fill(-1);
  for (let value = end - 1, next = -1; value >= 0; value--) {
    if (allowed[value] === 1) next = value;
    table[value] = next;
  }
  return table;
}

/** The plain days of the month as bits 1-31, and the day-of-week field as 7-bit masks (bit 0 = Sunday). */
interface DayFieldMasks {
  /** Plain days of the month, bits 1-31. */
  readonly days: number;
  /** Plain weekdays: any day of the month. */
  readonly every: number;
  /** `nL`: only in the month's last seven days. */
  readonly last: number;
  /** `n#k` at index k (1-5): only in the k-th seven days. */
  readonly nth: Int32Array;
}

function dayFieldMasks({ daysOfMonth, daysOfWeek }: ParsedCron): DayFieldMasks {
  const nth = new Int32Array(6);
  for (const { weekday, nth: k } of daysOfWeek.nthOfMonth) nth[k]! |= 1 << weekday;
  return {
    days: bits(daysOfMonth.days),
    every: bits(daysOfWeek.weekdays),
    last: bits(daysOfWeek.lastOfMonth),
    nth,
  };
}

function dayMask(
  parsed: ParsedCron,
  masks: DayFieldMasks,
  length: number,
  weekdayOfFirst: number,
): number {
  const dom = parsed.daysOfMonth;
  // Bits 1..length; 31 days fill the word (-2 is every bit but bit 0).
  let byDay = masks.days & (length === 31 ? -2 : (1 << (length + 1)) - 2);
  if (dom.lastDay) byDay |= 1 << length;
  if (dom.lastWeekday) byDay |= 1 << nearestWeekday(length, length, weekdayOfFirst);
  for (const day of dom.nearestWeekdays) {
    if (day <= length) byDay |= 1 << nearestWeekday(day, length, weekdayOfFirst);
  }
  let byWeekday = 0;
  for (let day = 1; day <= length; day++) {
    const weekday = 1 << ((weekdayOfFirst + day - 1) % 7);
    const allowed =
      masks.every | (day + 7 > length ? masks.last : 0) | masks.nth[((day + 6) / 7) | 0]!;
    if ((allowed & weekday) !== 0) byWeekday |= 1 << day;
  }
  return parsed.dayCombination === 'and' ? byDay & byWeekday : byDay | byWeekday;
}

function bits(values: readonly number[]): number {
  let mask = 0;
  for (const value of values) mask |= 1 << value;
  return mask;
}

/** The weekday nearest `day` without leaving the month (Quartz's `W`). */
function nearestWeekday(day: number, length: number, weekdayOfFirst: number): number {
  const weekday = (weekdayOfFirst + day - 1) % 7;
  if (weekday === 6) return day === 1 ? 3 : day - 1;
  if (weekday === 0) return day === length ? day - 2 : day + 1;
  return day;
}
