import type { ReadSignalsOptions, SignalInput } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import { checkExecutionId } from './check-execution-id.js';
import { encodePayload } from './json-codec.js';
import { readOptions } from './read-options.js';
import { checkWellFormed } from './well-formed-text.js';

/** A validated signal, payload already in its stored text form. */
export interface PreparedSignal {
  executionId: string;
  name: string;
  payloadText: string;
  idempotencyKey: string | null;
  at: number;
}

const signalKeys = new Set(['executionId', 'name', 'payload', 'idempotencyKey']);

function invalid(message: string, executionId?: string): never {
  throw new LoomError(
    ErrorCode.INVALID_ENVELOPE,
    message,
    executionId === undefined ? {} : { executionId },
  );
}

function checkName(value: unknown, what: string, executionId: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    invalid(`a signal's ${what} must be a non-empty string`, executionId);
  }
  if (value.length > Limits.signalNameLengthMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `a signal's ${what} is ${value.length} characters, over signalNameLengthMax (${Limits.signalNameLengthMax})`,
      { limit: 'signalNameLengthMax', executionId },
    );
  }
  return checkWellFormed(value, what, ErrorCode.INVALID_ENVELOPE, { executionId });
}

/** Validates a signal and encodes its payload; throws a typed error naming the problem. */
export function prepareSignal(signal: SignalInput, nowMs: number): PreparedSignal {
  if (typeof signal !== 'object' || signal === null) invalid('a signal must be an object');
  for (const key of Object.keys(signal)) {
    if (!signalKeys.has(key)) invalid(`a signal has an unknown field '${key}'`);
  }
  const executionId = checkExecutionId(signal.executionId);
  const name = checkName(signal.name, 'name', executionId);
  if (!('payload' in signal)) invalid('a signal needs a payload (use null for none)', executionId);
  const payloadText = encodePayload(signal.payload, executionId);
  if (Buffer.byteLength(payloadText, 'utf8') > Limits.payloadBytesMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `a signal payload is over payloadBytesMax (${Limits.payloadBytesMax})`,
      { limit: 'payloadBytesMax', executionId },
    );
  }
  const idempotencyKey =
    signal.idempotencyKey === undefined
      ? null
      : checkName(signal.idempotencyKey, 'idempotencyKey', executionId);
  return { executionId, name, payloadText, idempotencyKey, at: nowMs };
}

/** Validated `readSignals` options. */
export function readSignalsOptions(options: ReadSignalsOptions | undefined): {
  afterSignalId: number;
  limit: number;
} {
  const { fromSequence, limit } = readOptions({
    fromSequence: options?.afterSignalId ?? 0,
    ...(options?.limit === undefined ? {} : { limit: options.limit }),
  });
  return { afterSignalId: fromSequence, limit };
}

/** `EXECUTION_NOT_FOUND` for a signal to an execution the log does not have. */
export function signalTargetMissing(executionId: string): LoomError {
  return new LoomError(
    ErrorCode.EXECUTION_NOT_FOUND,
    `cannot signal execution ${executionId}: it is not in the log (start it first)`,
    { executionId },
  );
}

/** `EXECUTION_SETTLED` for a signal to an execution that already ended. */
export function signalTargetSettled(executionId: string): LoomError {
  return new LoomError(
    ErrorCode.EXECUTION_SETTLED,
    `cannot signal execution ${executionId}: it already settled, so nothing would receive it`,
    { executionId },
  );
}
