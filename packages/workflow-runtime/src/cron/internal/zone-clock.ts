import { LoomError, WorkflowErrorCode } from '../../errors.js';
import { CronLimits } from '../cron-limits.js';
import { daysFromCivil } from './civil-date.js';

/**
 * Wall clocks of one IANA time zone, read through `Intl.DateTimeFormat` (the runtime's own
 * tz database; no dependency). A wall time is written as milliseconds on a clock that has
 * no offset and no DST: `daysFromCivil(y, m, d) * DAY_MS + time of day`.
 */
export interface ZoneClock {
  readonly timeZone: string;
  /** True for UTC: wall time equals the instant, and the search never asks `Intl`. */
  readonly isUtc: boolean;
  /** The wall time at an instant (both whole seconds). */
  wallAt(instantMs: number): number;
  /** `wallAt(instant) - instant`: the zone's UTC offset at that instant, in ms. */
  offsetAt(instantMs: number): number;
}

const UTC_CLOCK: ZoneClock = {
  timeZone: 'UTC',
  isUtc: true,
  wallAt: (instantMs) => instantMs,
  offsetAt: () => 0,
};

const clocks = new Map<string, ZoneClock>();

/** The clock of `timeZone` (cached). Throws `INVALID_TIME_ZONE` for a name `Intl` rejects. */
export function zoneClock(timeZone: string): ZoneClock {
  if (timeZone === 'UTC') return UTC_CLOCK;
  const cached = clocks.get(timeZone);
  if (cached !== undefined) return cached;
  const clock = createClock(timeZone);
  // Zones are few (about 600 IANA names), so a full cache is a misuse; starting over is enough.
  if (clocks.size >= CronLimits.timeZoneCacheMax) clocks.clear();
  clocks.set(timeZone, clock);
  return clock;
}

function createClock(timeZone: string): ZoneClock {
  let format: Intl.DateTimeFormat;
  try {
    if (typeof timeZone !== 'string' || timeZone === '') throw new RangeError('not a name');
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch (error) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_TIME_ZONE,
      `time zone ${JSON.stringify(timeZone)} is not an IANA name this runtime knows (for example 'Europe/Berlin' or 'UTC')`,
      { timeZone },
      error,
    );
  }
  const resolved = format.resolvedOptions().timeZone;
  if (resolved === 'UTC' || resolved === 'Etc/UTC' || resolved === 'Etc/GMT') {
    return { ...UTC_CLOCK, timeZone };
  }
  const wallAt = readsFormattedText(format) ? wallFromText(format) : wallFromParts(format);
  return { timeZone, isUtc: false, wallAt, offsetAt: (instantMs) => wallAt(instantMs) - instantMs };
}

type WallReader = (instantMs: number) => number;

// `format()` is about 4× faster than `formatToParts()`; its text is only trusted after it
// reads one known instant correctly, so a runtime that lays it out differently still works.
function readsFormattedText(format: Intl.DateTimeFormat): boolean {
  const probe = Date.UTC(2001, 1, 3, 4, 5, 6);
  return wallFromText(format)(probe) === wallFromParts(format)(probe);
}

function wallFromText(format: Intl.DateTimeFormat): WallReader {
  const fields = [0, 0, 0, 0, 0, 0];
  return (instantMs) => {
    // en-US, h23: "2/3/2001 AD, 04:05:06" — month, day, year, era, hour, minute, second.
    const text = format.format(instantMs);
    let count = 0;
    let value = 0;
    let inNumber = false;
    let beforeChrist = false;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code >= 48 && code <= 57) {
        value = value * 10 + code - 48;
        inNumber = true;
        continue;
      }
      if (inNumber && count < 6) fields[count++] = value;
      inNumber = false;
      value = 0;
      if (code === 66 /* "B" of "BC" */) beforeChrist = true;
    }
    if (inNumber && count < 6) fields[count++] = value;
    if (count !== 6) throw new Error(`Intl.DateTimeFormat wrote "${text}"; expected 6 numbers`);
    const year = beforeChrist ? 1 - fields[2]! : fields[2]!;
    return wallMs(year, fields[0]!, fields[1]!, fields[3]!, fields[4]!, fields[5]!);
  };
}

function wallFromParts(format: Intl.DateTimeFormat): WallReader {
  return (instantMs) => {
    const parts: Record<string, string> = {};
    for (const part of format.formatToParts(instantMs)) parts[part.type] = part.value;
    const year = Number(parts.year);
    return wallMs(
      parts.era === 'BC' ? 1 - year : year,
      Number(parts.month),
      Number(parts.day),
      Number(parts.hour),
      Number(parts.minute),
      Number(parts.second),
    );
  };
}

function wallMs(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number {
  return daysFromCivil(year, month, day) * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000;
}
