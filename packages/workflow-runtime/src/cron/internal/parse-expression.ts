import { CronLimits } from '../cron-limits.js';
import type {
  CronDaysOfMonth,
  CronDaysOfWeek,
  CronNthWeekday,
  ParsedCron,
} from '../parsed-cron.js';
import { type CronFieldSpec, CronFieldSpecs } from './cron-field-specs.js';
import { invalidCron } from './invalid-cron.js';
import { addRangeItem, parseFieldValue, setValues } from './parse-field.js';

/** The `@` aliases and the 5-field expressions they stand for. */
const ALIASES: ReadonlyMap<string, string> = new Map([
  ['@yearly', '0 0 1 1 *'],
  ['@annually', '0 0 1 1 *'],
  ['@monthly', '0 0 1 * *'],
  ['@weekly', '0 0 * * 0'],
  ['@daily', '0 0 * * *'],
  ['@midnight', '0 0 * * *'],
  ['@hourly', '0 * * * *'],
]);

const NEAREST_WEEKDAY = /^(\d+)W$/;
const LAST_WEEKDAY_OF_MONTH = /^(.+)L$/;
const NTH_WEEKDAY_OF_MONTH = /^([^#]+)#([^#]*)$/;
const DIGITS = /^\d+$/;

/**
 * Parses and validates a cron expression (5 fields, or 6 with seconds first, or an alias).
 * Throws `INVALID_CRON` naming the field and the reason.
 */
export function parseExpression(input: unknown): ParsedCron {
  if (typeof input !== 'string') {
    throw invalidCron(String(input), { reason: `expected a string, got ${typeof input}` });
  }
  const expression = input.trim();
  if (expression.length > CronLimits.expressionLengthMax) {
    throw invalidCron(expression.slice(0, 40) + '…', {
      reason: `the expression is ${expression.length} characters, over the limit of ${CronLimits.expressionLengthMax}`,
      limit: 'expressionLengthMax',
    });
  }
  if (expression === '') throw invalidCron(expression, { reason: 'the expression is empty' });
  const body = expression.startsWith('@') ? expandAlias(expression) : expression;
  const parts = body.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) {
    throw invalidCron(expression, {
      reason: `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got ${parts.length}`,
    });
  }
  const hasSeconds = parts.length === 6;
  const [minute, hour, dayOfMonth, month, dayOfWeek] = hasSeconds ? parts.slice(1) : parts;
  const daysOfMonth = parseDaysOfMonth(expression, dayOfMonth!);
  const daysOfWeek = parseDaysOfWeek(expression, dayOfWeek!);
  return deepFreeze({
    expression,
    hasSeconds,
    seconds: hasSeconds ? parsePlainField(expression, CronFieldSpecs.second, parts[0]!) : [0],
    minutes: parsePlainField(expression, CronFieldSpecs.minute, minute!),
    hours: parsePlainField(expression, CronFieldSpecs.hour, hour!),
    daysOfMonth,
    months: parsePlainField(expression, CronFieldSpecs.month, month!),
    daysOfWeek,
    dayCombination: daysOfMonth.wildcard || daysOfWeek.wildcard ? 'and' : 'or',
  });
}

function expandAlias(expression: string): string {
  const alias = expression.toLowerCase();
  const expanded = ALIASES.get(alias);
  if (expanded !== undefined) return expanded;
  const reason =
    alias === '@reboot'
      ? '@reboot means "at startup", which is not a schedule; start the flow at boot instead'
      : `unknown alias ${expression}; the aliases are ${[...ALIASES.keys()].join(', ')}`;
  throw invalidCron(expression, { token: expression, reason });
}

function parsePlainField(expression: string, spec: CronFieldSpec, text: string): number[] {
  const flags: boolean[] = [];
  for (const item of listItems(expression, spec, text)) addRangeItem(expression, spec, item, flags);
  return setValues(flags);
}

function listItems(expression: string, spec: CronFieldSpec, text: string): string[] {
  const items = text.split(',');
  if (items.includes('')) {
    throw invalidCron(expression, {
      field: spec.name,
      token: text,
      reason: `${spec.name} list '${text}' has an empty item`,
    });
  }
  if (text !== '?' && items.includes('?')) {
    throw invalidCron(expression, {
      field: spec.name,
      token: text,
      reason: `${spec.name} '${text}': '?' must be the whole field`,
    });
  }
  return items;
}

function parseDaysOfMonth(expression: string, text: string): CronDaysOfMonth {
  const spec = CronFieldSpecs.dayOfMonth;
  if (text === '?') return { ...allDaysOfMonth(), wildcard: true };
  const days: boolean[] = [];
  const nearest: boolean[] = [];
  let lastDay = false;
  let lastWeekday = false;
  for (const item of listItems(expression, spec, text)) {
    const upper = item.toUpperCase();
    const nearestMatch = NEAREST_WEEKDAY.exec(upper);
    if (upper === 'L') lastDay = true;
    else if (upper === 'LW') lastWeekday = true;
    else if (nearestMatch !== null)
      nearest[parseFieldValue(expression, spec, nearestMatch[1]!)] = true;
    else if (/[LW#]/.test(upper)) {
      throw invalidCron(expression, {
        field: spec.name,
        token: item,
        reason: `day-of-month '${item}' is not valid here: day-of-month takes L (last day), LW (last weekday) and nW (weekday nearest day n, e.g. 15W); '#' belongs in day-of-week (FRI#2)`,
      });
    } else addRangeItem(expression, spec, item, days);
  }
  return {
    wildcard: text.startsWith('*'),
    days: setValues(days),
    lastDay,
    lastWeekday,
    nearestWeekdays: setValues(nearest),
  };
}

function allDaysOfMonth(): Omit<CronDaysOfMonth, 'wildcard'> {
  const days = Array.from({ length: 31 }, (_, i) => i + 1);
  return { days, lastDay: false, lastWeekday: false, nearestWeekdays: [] };
}

function parseDaysOfWeek(expression: string, text: string): CronDaysOfWeek {
  const spec = CronFieldSpecs.dayOfWeek;
  if (text === '?') {
    return { wildcard: true, weekdays: [0, 1, 2, 3, 4, 5, 6], lastOfMonth: [], nthOfMonth: [] };
  }
  const weekdays: boolean[] = [];
  const last: boolean[] = [];
  const nth = new Map<string, CronNthWeekday>();
  for (const item of listItems(expression, spec, text)) {
    const upper = item.toUpperCase();
    const lastMatch = LAST_WEEKDAY_OF_MONTH.exec(upper);
    const nthMatch = NTH_WEEKDAY_OF_MONTH.exec(item);
    if (upper === 'L') {
      throw invalidCron(expression, {
        field: spec.name,
        token: item,
        reason: `day-of-week 'L' alone is ambiguous: write 5L or FRIL for the last Friday of the month, or put L in day-of-month for the month's last day`,
      });
    } else if (lastMatch !== null) {
      last[weekdayValue(expression, item.slice(0, -1))] = true;
    } else if (nthMatch !== null) {
      const weekday = weekdayValue(expression, nthMatch[1]!);
      const nthText = nthMatch[2]!;
      const n = DIGITS.test(nthText) ? Number(nthText) : Number.NaN;
      if (!(n >= 1 && n <= 5)) {
        throw invalidCron(expression, {
          field: spec.name,
          token: item,
          reason: `day-of-week '${item}': the occurrence after '#' must be 1 to 5, got '${nthText}'`,
        });
      }
      nth.set(`${weekday}#${n}`, { weekday, nth: n });
    } else if (/^(?:LW|\d+W)$/.test(upper) || upper.includes('#')) {
      throw invalidCron(expression, {
        field: spec.name,
        token: item,
        reason: `day-of-week '${item}' is not valid here: day-of-week takes nL (last such weekday, e.g. 5L) and n#k (k-th such weekday, e.g. FRI#2); 'W' belongs in day-of-month`,
      });
    } else addRangeItem(expression, spec, item, weekdays);
  }
  return {
    wildcard: text.startsWith('*'),
    weekdays: setValues(weekdays),
    lastOfMonth: setValues(last),
    nthOfMonth: [...nth.values()].sort((a, b) => a.weekday - b.weekday || a.nth - b.nth),
  };
}

/** A single weekday (`5`, `FRI`, `7` = Sunday) as 0-6. */
function weekdayValue(expression: string, token: string): number {
  return parseFieldValue(expression, CronFieldSpecs.dayOfWeek, token) % 7;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
