import type { FindExecutionsFilter } from './read-options.js';

/** The WHERE clause of a `findExecutions` query, its parameters, and a key naming its shape. */
export interface FindExecutionsWhere {
  /** Conditions on the index row `x`, to be joined with AND (the cursor comes first). */
  conditions: string[];
  values: unknown[];
  /**
   * Which filters are present: equal keys mean equal SQL text, so a backend prepares one
   * statement per shape (at most a few dozen) and reuses it.
   */
  shape: string;
}

/**
 * Builds the filters of a `findExecutions` call over the execution index (aliased `x`) for
 * either SQL dialect: `placeholder(n, type)` renders the n-th parameter (`?` for SQLite,
 * `$n::type` for Postgres). Only the filters given appear, so each shape's plan can use the index
 * that serves it: `(status, execution_id)`, `(flow, execution_id)` or
 * `(settled_as, execution_id)`.
 */
export function findExecutionsWhere(
  filter: FindExecutionsFilter,
  placeholder: (index: number, type: 'text' | 'bigint') => string,
): FindExecutionsWhere {
  const conditions: string[] = [];
  const values: unknown[] = [];
  let shape = '';
  const add = (column: string, operator: string, value: unknown, type: 'text' | 'bigint') => {
    values.push(value);
    conditions.push(`x.${column} ${operator} ${placeholder(values.length, type)}`);
  };
  add('execution_id', '>', filter.afterExecutionId, 'text');
  if (filter.status !== undefined) {
    add('status', '=', filter.status, 'text');
    shape += 's';
  }
  if (filter.settledAs !== undefined) {
    add('settled_as', '=', filter.settledAs, 'text');
    shape += 'o';
  }
  if (filter.flow !== undefined) {
    add('flow', '=', filter.flow, 'text');
    shape += 'f';
  }
  if (filter.version === null) {
    conditions.push('x.version IS NULL');
    shape += 'n';
  } else if (filter.version !== undefined) {
    add('version', '=', filter.version, 'text');
    shape += 'v';
  }
  const bounds: Array<[keyof FindExecutionsFilter, string, string, string]> = [
    ['createdFromMs', 'created_at_ms', '>=', 'c'],
    ['createdBeforeMs', 'created_at_ms', '<', 'C'],
    ['updatedFromMs', 'updated_at_ms', '>=', 'u'],
    ['updatedBeforeMs', 'updated_at_ms', '<', 'U'],
    ['dueAtOrBeforeMs', 'wake_at_ms', '<=', 'd'],
  ];
  for (const [key, column, operator, letter] of bounds) {
    const value = filter[key];
    if (value === undefined) continue;
    add(column, operator, value, 'bigint');
    shape += letter;
  }
  return { conditions, values, shape: shape === '' ? 'all' : shape };
}
