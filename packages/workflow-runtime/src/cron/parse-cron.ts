import { rememberCompiled } from './internal/compiled-cron.js';
import { parseExpression } from './internal/parse-expression.js';
import type { ParsedCron } from './parsed-cron.js';

/**
 * Parses and validates a cron expression into a typed schedule. Accepts 5 fields
 * (`minute hour day-of-month month day-of-week`), 6 with seconds first, or an alias
 * (`@yearly @annually @monthly @weekly @daily @midnight @hourly`). Fields take `*`, numbers,
 * names (`JAN-DEC`, `SUN-SAT`, any case), ranges `a-b`, steps `*\/n` `a-b\/n` `a\/n`, and lists;
 * day-of-month also `L`, `LW`, `nW`; day-of-week also `nL` (`5L`), `n#k` (`FRI#2`) and 7
 * for Sunday; either day field `?`. Parse once and pass the result to `nextOccurrence` on a
 * hot path.
 *
 * @throws LoomError `INVALID_CRON` naming the field and the reason
 *   ("day-of-month 32 is out of range 1-31").
 * @example
 * const weekdays = parseCron('0 9 * * MON-FRI');
 * nextOccurrence(weekdays, Date.now(), 'Europe/Berlin');
 */
export function parseCron(expression: string): ParsedCron {
  return rememberCompiled(parseExpression(expression));
}
