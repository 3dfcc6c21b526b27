import { civilFromDays, DAY_MS, daysFromCivil } from './civil-date.js';
import { type CompiledCron, monthDayMask } from './compiled-cron.js';

/**
 * The earliest wall time at or after `fromWallMs` (whole seconds) that the schedule matches,
 * in years up to `lastYear`; `undefined` if there is none. It jumps: a field that does not match moves
 * straight to its next allowed value and resets every field below it; a field with no value
 * left carries into the field above. A month is tested with one mask lookup, so a year costs
 * at most 12 steps even when nothing in it matches.
 */
export function nextWallTime(
  cron: CompiledCron,
  fromWallMs: number,
  lastYear: number,
): number | undefined {
  const days = Math.floor(fromWallMs / DAY_MS);
  const secondOfDay = (fromWallMs - days * DAY_MS) / 1000;
  let { year, month, day } = civilFromDays(days);
  let hour = Math.floor(secondOfDay / 3600);
  let minute = Math.floor((secondOfDay % 3600) / 60);
  let second = secondOfDay % 60;
  while (year <= lastYear) {
    const nextMonth = cron.nextMonth[month]!;
    if (nextMonth < 0) {
      year++;
      month = 1;
      day = 1;
      hour = minute = second = 0;
      continue;
    }
    if (nextMonth !== month) {
      month = nextMonth;
      day = 1;
      hour = minute = second = 0;
    }
    const nextDay = nextSetBit(monthDayMask(cron, year, month), day);
    if (nextDay < 0) {
      month++;
      day = 1;
      hour = minute = second = 0;
      continue;
    }
    if (nextDay !== day) {
      day = nextDay;
      hour = minute = second = 0;
    }
    const nextHour = cron.nextHour[hour]!;
    if (nextHour < 0) {
      day++;
      hour = minute = second = 0;
      continue;
    }
    if (nextHour !== hour) {
      hour = nextHour;
      minute = second = 0;
    }
    const nextMinute = cron.nextMinute[minute]!;
    if (nextMinute < 0) {
      hour++;
      minute = second = 0;
      continue;
    }
    if (nextMinute !== minute) {
      minute = nextMinute;
      second = 0;
    }
    const nextSecond = cron.nextSecond[second]!;
    if (nextSecond < 0) {
      minute++;
      second = 0;
      continue;
    }
    return (
      daysFromCivil(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + nextSecond) * 1000
    );
  }
  return undefined;
}

/** The lowest set bit of `mask` at index `from` or above (bits 1-31), or -1. */
function nextSetBit(mask: number, from: number): number {
  if (from > 31) return -1;
  const candidates = (mask >>> from) << from;
  return candidates === 0 ? -1 : 31 - Math.clz32(candidates & -candidates);
}
