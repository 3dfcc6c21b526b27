import type { FindExecutionsOptions, ReadAllOptions, ReadOptions } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import { checkWellFormed } from './well-formed-text.js';

function argument(message: string, fields: Record<string, unknown>): never {
  throw new LoomError(ErrorCode.INVALID_ARGUMENT, message, fields);
}

function nonNegativeInteger(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    argument(`${name} must be a non-negative integer, got ${String(value)}`, { path: name });
  }
  return value;
}

function checkLimit(limit: unknown): number {
  if (limit === undefined) return Limits.readLimitMax;
  const value = nonNegativeInteger(limit, 'limit');
  if (value === 0 || value > Limits.readLimitMax) {
    argument(`limit must be between 1 and readLimitMax (${Limits.readLimitMax}), got ${value}`, {
      path: 'limit',
      limit: 'readLimitMax',
    });
  }
  return value;
}

/** Validated `read` options with defaults filled in. */
export function readOptions(options: ReadOptions | undefined): {
  fromSequence: number;
  limit: number;
} {
  return {
    fromSequence: nonNegativeInteger(options?.fromSequence ?? 0, 'fromSequence'),
    limit: checkLimit(options?.limit),
  };
}

/** Validated `readAll` options with defaults filled in. */
export function readAllOptions(options: ReadAllOptions | undefined): {
  afterPosition: number;
  limit: number;
} {
  return {
    afterPosition: nonNegativeInteger(options?.afterPosition ?? 0, 'afterPosition'),
    limit: checkLimit(options?.limit),
  };
}

/** Validated `findExecutions` options with defaults filled in. */
export function findExecutionsOptions(options: FindExecutionsOptions): {
  status: FindExecutionsOptions['status'];
  afterExecutionId: string;
  dueAtOrBeforeMs: number | undefined;
  limit: number;
} {
  if (!['running', 'suspended', 'settled'].includes(options?.status)) {
    argument(`status must be running, suspended or settled, got ${String(options?.status)}`, {
      path: 'status',
    });
  }
  const after = options.afterExecutionId ?? '';
  if (typeof after !== 'string')
    argument('afterExecutionId must be a string', { path: 'afterExecutionId' });
  return {
    status: options.status,
    afterExecutionId: checkWellFormed(after, 'afterExecutionId', ErrorCode.INVALID_ARGUMENT),
    dueAtOrBeforeMs:
      options.dueAtOrBeforeMs === undefined
        ? undefined
        : nonNegativeInteger(options.dueAtOrBeforeMs, 'dueAtOrBeforeMs'),
    limit: checkLimit(options.limit),
  };
}
