import { LoomError, WorkflowErrorCode } from '../errors.js';
import { CronLimits } from './cron-limits.js';
import { compiledCron } from './internal/compiled-cron.js';
import { zoneClock } from './internal/zone-clock.js';
import { afterInstant, nextFireMs } from './next-occurrence.js';
import type { ParsedCron } from './parsed-cron.js';

/**
 * The next `count` fire times strictly after `after`, ascending, as epoch milliseconds: each
 * one is `nextOccurrence` of the one before, so the DST rules are the same.
 *
 * @throws LoomError `INVALID_CRON`, `INVALID_TIME_ZONE`, `INVALID_ARGUMENT` (a bad `after`, or
 *   `count` not a whole number from 0 to `CronLimits.occurrencesCountMax`), `CRON_NEVER_FIRES`.
 * @example
 * occurrences('0 0 L * *', Date.parse('2024-01-15T00:00:00Z'), 'UTC', 3);
 * // → Jan 31, Feb 29 and Mar 31 2024 at 00:00 UTC
 */
export function occurrences(
  cron: string | ParsedCron,
  after: Date | number,
  timeZone: string | undefined,
  count: number,
): number[] {
  if (!Number.isInteger(count) || count < 0 || count > CronLimits.occurrencesCountMax) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `count must be a whole number from 0 to ${CronLimits.occurrencesCountMax}, got ${String(count)}; page through longer spans by passing the last fire time as after`,
      { field: 'count', actual: count, limit: 'occurrencesCountMax' },
    );
  }
  let afterMs = afterInstant(after);
  const compiled = compiledCron(cron);
  const zone = zoneClock(timeZone ?? 'UTC');
  const fires: number[] = [];
  while (fires.length < count) {
    afterMs = nextFireMs(compiled, zone, afterMs);
    fires.push(afterMs);
  }
  return fires;
}
