import type {
  ExecutionStatus,
  FindExecutionsOptions,
  ReadAllOptions,
  ReadOptions,
  SettledAs,
} from '../envelope.js';
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

const findStatuses: ReadonlySet<string> = new Set([
  'running',
  'suspended',
  'settled',
  'completed',
  'failed',
  'cancelled',
  'continued',
]);

/** Validated `findExecutions` filters: only those given, plus the cursor and the limit. */
export interface FindExecutionsFilter {
  /** The index status to match, and with it how a settled execution ended. */
  status: ExecutionStatus | undefined;
  settledAs: SettledAs | undefined;
  flow: string | undefined;
  /** Undefined: any version; null: unversioned executions only. */
  version: string | null | undefined;
  createdFromMs: number | undefined;
  createdBeforeMs: number | undefined;
  updatedFromMs: number | undefined;
  updatedBeforeMs: number | undefined;
  afterExecutionId: string;
  dueAtOrBeforeMs: number | undefined;
  limit: number;
}

function optionalBound(value: unknown, name: string): number | undefined {
  return value === undefined ? undefined : nonNegativeInteger(value, name);
}

/** Validated `findExecutions` options with defaults filled in. Throws `INVALID_ARGUMENT`. */
export function findExecutionsOptions(
  options: FindExecutionsOptions | undefined,
): FindExecutionsFilter {
  const given = options ?? {};
  if (typeof given !== 'object') argument('findExecutions takes an options object', {});
  const wanted = given.status;
  if (wanted !== undefined && !findStatuses.has(wanted)) {
    argument(
      `status must be running, suspended, settled, completed, failed, cancelled or continued, got ${String(wanted)}`,
      { path: 'status' },
    );
  }
  const settled = wanted === 'running' || wanted === 'suspended' || wanted === 'settled';
  const flow = given.flow;
  if (flow !== undefined && (typeof flow !== 'string' || flow.length === 0)) {
    argument('flow must be a non-empty string (a flow name)', { path: 'flow' });
  }
  const version = given.version;
  if (version !== undefined && version !== null && typeof version !== 'string') {
    argument('version must be a string, or null for unversioned executions', { path: 'version' });
  }
  const after = given.afterExecutionId ?? '';
  if (typeof after !== 'string')
    argument('afterExecutionId must be a string', { path: 'afterExecutionId' });
  return {
    status: wanted === undefined ? undefined : settled ? (wanted as ExecutionStatus) : 'settled',
    settledAs: wanted === undefined || settled ? undefined : (wanted as SettledAs),
    flow:
      flow === undefined ? undefined : checkWellFormed(flow, 'flow', ErrorCode.INVALID_ARGUMENT),
    version:
      typeof version === 'string'
        ? checkWellFormed(version, 'version', ErrorCode.INVALID_ARGUMENT)
        : version,
    createdFromMs: optionalBound(given.createdFromMs, 'createdFromMs'),
    createdBeforeMs: optionalBound(given.createdBeforeMs, 'createdBeforeMs'),
    updatedFromMs: optionalBound(given.updatedFromMs, 'updatedFromMs'),
    updatedBeforeMs: optionalBound(given.updatedBeforeMs, 'updatedBeforeMs'),
    afterExecutionId: checkWellFormed(after, 'afterExecutionId', ErrorCode.INVALID_ARGUMENT),
    dueAtOrBeforeMs: optionalBound(given.dueAtOrBeforeMs, 'dueAtOrBeforeMs'),
    limit: checkLimit(given.limit),
  };
}
