/**
 * A deliberately naive cron reference, the oracle for the cron tests. It shares no code with
 * `src/cron`: it reads each field's text itself, asks `Intl` for the wall clock of every
 * instant it visits, and walks the timeline one step (a minute, or a second for 6-field
 * expressions) at a time. Slow on purpose; simple enough to check by eye.
 *
 * The DST rule, stated over the timeline: the scan fires at instant t when some matching
 * wall time lies in (the latest wall time shown before t, the wall time shown at t]. A wall
 * time skipped by a gap therefore fires at the first instant after the gap, and a repeated
 * wall time only the first time round.
 */

const ALIASES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number;
  daysInMonth: number;
}

type Test = (value: number, wall: Wall) => boolean;

function tokenValue(token: string, names?: string[], firstName = 0): number {
  const index = names?.indexOf(token) ?? -1;
  return index >= 0 ? index + firstName : Number(token);
}

/** `*`, `a`, `a-b`, each with an optional `/step`; `*` and `a/step` end at `top`. */
function plainItem(item: string, low: number, top: number, names?: string[], first = 0) {
  const [range = '', stepText] = item.split('/');
  const step = stepText === undefined ? 1 : Number(stepText);
  let from: number;
  let to: number;
  if (range === '*') [from, to] = [low, top];
  else if (range.includes('-')) {
    const [a = '', b = ''] = range.split('-');
    [from, to] = [tokenValue(a, names, first), tokenValue(b, names, first)];
  } else {
    from = tokenValue(range, names, first);
    to = stepText === undefined ? from : top;
  }
  return (value: number) => value >= from && value <= to && (value - from) % step === 0;
}

function anyOf(tests: Test[]): Test {
  return (value, wall) => tests.some((test) => test(value, wall));
}

function plainField(text: string, low: number, top: number, names?: string[], first = 0): Test {
  return anyOf(text.split(',').map((item) => plainItem(item, low, top, names, first)));
}

function isWeekday(year: number, month: number, day: number): boolean {
  const weekday = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  return weekday !== 0 && weekday !== 6;
}

function dayOfMonthField(text: string): Test {
  if (text === '?') return () => true;
  return anyOf(
    text.split(',').map((item): Test => {
      if (item === 'L') return (day, wall) => day === wall.daysInMonth;
      if (item === 'LW') {
        return (day, wall) => {
          let last = wall.daysInMonth;
          while (!isWeekday(wall.year, wall.month, last)) last--;
          return day === last;
        };
      }
      if (item.endsWith('W')) {
        const target = Number(item.slice(0, -1));
        return (day, wall) => {
          if (target > wall.daysInMonth) return false;
          let best = 0;
          for (let d = 1; d <= wall.daysInMonth; d++) {
            if (
              isWeekday(wall.year, wall.month, d) &&
              (best === 0 || Math.abs(d - target) < Math.abs(best - target))
            )
              best = d;
          }
          return day === best;
        };
      }
      const test = plainItem(item, 1, 31);
      return (day) => test(day);
    }),
  );
}

function dayOfWeekField(text: string): Test {
  if (text === '?') return () => true;
  return anyOf(
    text.split(',').map((item): Test => {
      if (item.includes('#')) {
        const [weekday = '', nth = ''] = item.split('#');
        const wanted = tokenValue(weekday, WEEKDAYS) % 7;
        return (weekdayNow, wall) =>
          weekdayNow === wanted && Math.floor((wall.day - 1) / 7) + 1 === Number(nth);
      }
      if (item.endsWith('L')) {
        const wanted = tokenValue(item.slice(0, -1), WEEKDAYS) % 7;
        return (weekdayNow, wall) => weekdayNow === wanted && wall.day + 7 > wall.daysInMonth;
      }
      const test = plainItem(item, 0, 6, WEEKDAYS);
      // 7 is Sunday too.
      return (weekdayNow) => test(weekdayNow) || (weekdayNow === 0 && test(7));
    }),
  );
}

/** A predicate over wall times (written as if UTC) for a cron expression (assumed valid). */
export function naiveMatcher(expression: string): (wallMs: number) => boolean {
  const text = expression.trim();
  const fields = (ALIASES[text.toLowerCase()] ?? text).toUpperCase().split(/\s+/);
  const [second = '0', minute = '', hour = '', dom = '', month = '', dow = ''] =
    fields.length === 6 ? fields : ['0', ...fields];
  const tests = {
    second: plainField(second, 0, 59),
    minute: plainField(minute, 0, 59),
    hour: plainField(hour, 0, 23),
    month: plainField(month, 1, 12, MONTHS, 1),
    dom: dayOfMonthField(dom),
    dow: dayOfWeekField(dow),
  };
  // Vixie cron: a day field starting with '*' (or '?') is a wildcard; two restricted ones OR.
  const eitherWildcard = /^[*?]/.test(dom) || /^[*?]/.test(dow);
  return (wallMs) => {
    const secondOfDay = Math.floor((((wallMs % 86_400_000) + 86_400_000) % 86_400_000) / 1000);
    // The time of day first: cheap, and it rules out most instants before a Date is made.
    const time = { second: secondOfDay % 60, minute: Math.floor(secondOfDay / 60) % 60 };
    const hour = Math.floor(secondOfDay / 3600);
    if (!tests.second(time.second, NO_WALL) || !tests.minute(time.minute, NO_WALL)) return false;
    if (!tests.hour(hour, NO_WALL)) return false;
    const wall = wallFields(wallMs);
    if (!tests.month(wall.month, wall)) return false;
    const byDay = tests.dom(wall.day, wall);
    const byWeekday = tests.dow(wall.weekday, wall);
    return eitherWildcard ? byDay && byWeekday : byDay || byWeekday;
  };
}

const NO_WALL: Wall = {
  year: 0,
  month: 0,
  day: 0,
  hour: 0,
  minute: 0,
  second: 0,
  weekday: 0,
  daysInMonth: 0,
};

/** Wall-clock fields of a wall time (written as if it were UTC). */
function wallFields(wallMs: number): Wall {
  const date = new Date(wallMs);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth() + 1;
  return {
    year,
    month,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    second: date.getUTCSeconds(),
    weekday: date.getUTCDay(),
    daysInMonth: new Date(Date.UTC(year, month, 0)).getUTCDate(),
  };
}

const wallClocks = new Map<string, (instantMs: number) => number>();
const QUARTER_HOUR_MS = 900_000;

/**
 * The wall time of an instant in `timeZone`, written as if it were UTC. Asking `Intl` at
 * every minute of a months-long scan takes minutes, so the offset is read at each quarter
 * hour (and remembered); between two quarter hours with the same offset it holds throughout
 * (tz data has no pair of transitions 15 minutes apart), and otherwise `Intl` is asked
 * about the instant itself.
 */
export function naiveWallClock(timeZone: string): (instantMs: number) => number {
  const known = wallClocks.get(timeZone);
  if (known !== undefined) return known;
  const format = new Intl.DateTimeFormat('sv-SE', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const askIntl = (instantMs: number) => {
    const [, y, mo, d, h, mi, s] =
      /^(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+)$/.exec(format.format(instantMs)) ?? [];
    return Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  };
  const quarterOffsets = new Map<number, number>();
  const offsetAtQuarter = (quarter: number) => {
    let offset = quarterOffsets.get(quarter);
    if (offset === undefined) {
      offset = askIntl(quarter * QUARTER_HOUR_MS) - quarter * QUARTER_HOUR_MS;
      quarterOffsets.set(quarter, offset);
    }
    return offset;
  };
  const clock = (instantMs: number) => {
    const quarter = Math.floor(instantMs / QUARTER_HOUR_MS);
    const offset = offsetAtQuarter(quarter);
    return offset === offsetAtQuarter(quarter + 1) ? instantMs + offset : askIntl(instantMs);
  };
  wallClocks.set(timeZone, clock);
  return clock;
}

/**
 * The first fire time strictly after `afterMs` by walking the timeline step by step, or
 * `undefined` if none comes within `horizonMs` after it. Starts a day early to learn which
 * wall times the clock already showed (needed right after a fall-back).
 */
export function naiveNextOccurrence(
  expression: string,
  afterMs: number,
  timeZone: string,
  horizonMs: number,
): number | undefined {
  const matches = naiveMatcher(expression);
  const stepMs = expression.trim().split(/\s+/).length === 6 ? 1000 : 60_000;
  const wallAt = naiveWallClock(timeZone);
  let latestWallMs = Number.NEGATIVE_INFINITY;
  for (
    let t = Math.floor(afterMs / stepMs) * stepMs - 86_400_000;
    t <= afterMs + horizonMs;
    t += stepMs
  ) {
    const wallMs = timeZone === 'UTC' ? t : wallAt(t);
    if (t > afterMs) {
      // Usually just `wallMs`; after a gap, every wall time the clock skipped.
      for (let w = Math.max(latestWallMs + stepMs, wallMs - 86_400_000); w <= wallMs; w += stepMs) {
        if (matches(w)) return t;
      }
    }
    latestWallMs = Math.max(latestWallMs, wallMs);
  }
  return undefined;
}
