import type { CronFieldSpec } from './cron-field-specs.js';
import { invalidCron } from './invalid-cron.js';

const DIGITS = /^\d+$/;
const DAY_FIELD_ONLY = /[#?]|^(?:L|LW|\d+[LW])$/i;

/**
 * One value of a field: a number within the field's bounds or a name (JAN, MON; any case).
 * Throws `INVALID_CRON` naming the field.
 */
export function parseFieldValue(expression: string, spec: CronFieldSpec, token: string): number {
  if (token === '') {
    throw invalidCron(expression, {
      field: spec.name,
      token,
      reason: `${spec.name} has an empty value`,
    });
  }
  if (DIGITS.test(token)) {
    const value = Number(token);
    if (value < spec.min || value > spec.max) {
      throw invalidCron(expression, {
        field: spec.name,
        token,
        reason: `${spec.name} ${token} is out of range ${spec.min}-${spec.max}`,
      });
    }
    return value;
  }
  const named = spec.names?.get(token.toUpperCase());
  if (named !== undefined) return named;
  const names = spec.namesHint === undefined ? '' : ` or a name (${spec.namesHint})`;
  throw invalidCron(expression, {
    field: spec.name,
    token,
    reason: `${spec.name} '${token}' is not a number${names}`,
  });
}

/**
 * Adds to `into` the values of one list item: `*`, `n`, `a-b`, each optionally `/step`
 * (`n/step` runs from n to the field's end). Ranges must run forwards (`MON-FRI`, not
 * `FRI-MON`): Vixie cron does not wrap them either. Day-of-week 7 is stored as 0 (Sunday).
 */
export function addRangeItem(
  expression: string,
  spec: CronFieldSpec,
  item: string,
  into: boolean[],
): void {
  if (DAY_FIELD_ONLY.test(item)) {
    throw invalidCron(expression, {
      field: spec.name,
      token: item,
      reason: `${spec.name} '${item}': 'L', 'W', '#' and '?' are only allowed in day-of-month and day-of-week`,
    });
  }
  const slash = item.split('/');
  if (slash.length > 2) {
    throw invalidCron(expression, {
      field: spec.name,
      token: item,
      reason: `${spec.name} '${item}' has more than one '/'`,
    });
  }
  const [base = '', stepText] = slash;
  const step = stepText === undefined ? 1 : parseStep(expression, spec, item, stepText);
  let start: number;
  let end: number;
  if (base === '*') {
    start = spec.min;
    end = spec.wildcardMax;
  } else if (base.includes('-')) {
    const ends = base.split('-');
    if (ends.length !== 2) {
      throw invalidCron(expression, {
        field: spec.name,
        token: item,
        reason: `${spec.name} range '${base}' must be written start-end`,
      });
    }
    start = parseFieldValue(expression, spec, ends[0]!);
    end = parseFieldValue(expression, spec, ends[1]!);
    if (start > end) {
      throw invalidCron(expression, {
        field: spec.name,
        token: item,
        reason: `${spec.name} range ${base} runs backwards; write it as two ranges in a list (for example 22-23,0-2)`,
      });
    }
  } else {
    start = parseFieldValue(expression, spec, base);
    end = stepText === undefined ? start : spec.wildcardMax;
    if (start > end) {
      throw invalidCron(expression, {
        field: spec.name,
        token: item,
        reason: `${spec.name} '${item}' starts past ${spec.wildcardMax}, the end of its range`,
      });
    }
  }
  const sundayIsSeven = spec.name === 'day-of-week';
  for (let value = start; value <= end; value += step) {
    into[sundayIsSeven && value === 7 ? 0 : value] = true;
  }
}

function parseStep(expression: string, spec: CronFieldSpec, item: string, text: string): number {
  const span = spec.wildcardMax - spec.min + 1;
  const step = DIGITS.test(text) ? Number(text) : Number.NaN;
  if (!(step >= 1 && step <= span)) {
    throw invalidCron(expression, {
      field: spec.name,
      token: item,
      reason: `${spec.name} step '${text}' in '${item}' must be a whole number from 1 to ${span}`,
    });
  }
  return step;
}

/** The indexes set in `flags`, ascending: a sorted list without duplicates. */
export function setValues(flags: readonly boolean[]): number[] {
  const values: number[] = [];
  flags.forEach((set, value) => {
    if (set) values.push(value);
  });
  return values;
}
