import { civilFromDays, DAY_MS } from '../src/cron/internal/civil-date.js';
import {
  type CompiledCron,
  compiledCron,
  monthDayMask,
} from '../src/cron/internal/compiled-cron.js';
import type { ParsedCron } from '../src/cron/parsed-cron.js';

const MINUTE_MS = 60_000;

/**
 * The baseline P17 measures field jumping against: a minute-by-minute scan in UTC, made as
 * fast as a scan gets so the ratio is not flattered. It reuses the compiled lookup tables,
 * tests the cheap fields (minute, hour) first and the calendar only when they match, and
 * allocates only at minutes whose time of day matches. 5-field expressions only (seconds are 0); gives up after
 * `limitMs` and returns undefined.
 */
export function minuteScan(
  cron: string | ParsedCron,
  afterMs: number,
  limitMs = 45 * 366 * DAY_MS,
): number | undefined {
  const compiled: CompiledCron = compiledCron(cron);
  const { nextMinute, nextHour, nextMonth } = compiled;
  const endMs = afterMs + limitMs;
  for (
    let t = Math.floor(afterMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
    t <= endMs;
    t += MINUTE_MS
  ) {
    const minuteOfDay = Math.floor((t % DAY_MS) / MINUTE_MS);
    const minute = minuteOfDay % 60;
    if (nextMinute[minute] !== minute) continue;
    const hour = (minuteOfDay - minute) / 60;
    if (nextHour[hour] !== hour) continue;
    const { year, month, day } = civilFromDays(Math.floor(t / DAY_MS));
    if (nextMonth[month] !== month) continue;
    if ((monthDayMask(compiled, year, month) & (1 << day)) !== 0) return t;
  }
  return undefined;
}
