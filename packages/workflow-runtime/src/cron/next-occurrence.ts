import { LoomError, WorkflowErrorCode } from '../errors.js';
import { CronLimits } from './cron-limits.js';
import { civilFromDays, DAY_MS } from './internal/civil-date.js';
import { type CompiledCron, compiledCron } from './internal/compiled-cron.js';
import { fireInstant } from './internal/fire-instant.js';
import { nextWallTime } from './internal/next-wall-time.js';
import { type ZoneClock, zoneClock } from './internal/zone-clock.js';
import type { ParsedCron } from './parsed-cron.js';

/**
 * The next time the schedule fires strictly after `after`, as epoch milliseconds (always a
 * whole second). Field values are wall-clock values in `timeZone` (an IANA name). It jumps
 * field by field (year → month → day → hour → minute → second) straight to the next allowed
 * value, so a schedule years away costs no more than one a minute away.
 *
 * DST: each matching wall time fires once, at the first instant the zone's clock reaches or
 * passes it — a time skipped by a spring-forward gap fires at the first instant after the
 * gap; a time repeated by a fall-back fires at its first occurrence only.
 *
 * @throws LoomError `INVALID_CRON` (bad expression), `INVALID_TIME_ZONE`, `INVALID_ARGUMENT`
 *   (`after` not a valid time between years 1 and 9999), `CRON_NEVER_FIRES` (no match within
 *   `CronLimits.searchYearsMax` years, e.g. `0 0 30 2 *`).
 * @example
 * nextOccurrence('0 9 * * MON-FRI', Date.parse('2024-03-08T18:00:00Z'), 'America/New_York');
 * // → Date.parse('2024-03-11T13:00:00Z'): Monday 09:00 EDT, the first weekday after DST began
 */
export function nextOccurrence(
  cron: string | ParsedCron,
  after: Date | number,
  timeZone = 'UTC',
): number {
  const afterMs = afterInstant(after);
  const compiled = compiledCron(cron);
  return nextFireMs(compiled, zoneClock(timeZone), afterMs);
}

/** Checks `after` and returns it as epoch ms. Throws `INVALID_ARGUMENT`. */
export function afterInstant(after: Date | number): number {
  const afterMs = after instanceof Date ? after.getTime() : after;
  if (
    typeof afterMs !== 'number' ||
    !(afterMs >= CronLimits.afterMsMin && afterMs <= CronLimits.afterMsMax)
  ) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `after must be a Date or epoch milliseconds between 0001-01-01 and 9999-12-31 (UTC), got ${String(after)}`,
      { field: 'after', actual: String(after) },
    );
  }
  return afterMs;
}

/** {@link nextOccurrence} on checked inputs. Throws `CRON_NEVER_FIRES`. */
export function nextFireMs(cron: CompiledCron, zone: ZoneClock, afterMs: number): number {
  const afterSecondMs = Math.floor(afterMs / 1000) * 1000;
  let fromWallMs = zone.wallAt(afterSecondMs) + 1000;
  const lastYear = civilFromDays(Math.floor(fromWallMs / DAY_MS)).year + CronLimits.searchYearsMax;
  for (;;) {
    const wallMs = nextWallTime(cron, fromWallMs, lastYear);
    if (wallMs === undefined) throw neverFires(cron, zone);
    const fire = fireInstant(zone, wallMs, afterSecondMs);
    if (fire.fireAtMs !== undefined) return fire.fireAtMs;
    fromWallMs = fire.resumeAtWallMs;
  }
}

function neverFires(cron: CompiledCron, zone: ZoneClock): LoomError {
  const { expression } = cron.parsed;
  return new LoomError(
    WorkflowErrorCode.CRON_NEVER_FIRES,
    `cron expression "${expression}" matches no time in the next ${CronLimits.searchYearsMax} years, so it never fires (the calendar repeats every 400 years); check the day-of-month and month fields (for example "0 0 30 2 *" asks for February 30)`,
    { expression, timeZone: zone.timeZone, limit: 'searchYearsMax' },
  );
}
