import type { JsonValue } from '../envelope.js';
import { isLoomError } from '../errors.js';
import { encodePayload } from '../internal/json-codec.js';
import type { RecordedError } from './kernel-events.js';

const messageLengthMax = 4_000;

/**
 * Turns anything a flow or an effect threw into the plain record the log keeps. Non-Error
 * throws (a string, an object, undefined) become `{name: 'NonError', message: <what was thrown>}`.
 */
export function recordError(thrown: unknown): RecordedError {
  if (thrown instanceof Error || isLoomError(thrown)) {
    const error = thrown as Error & { code?: unknown; fields?: unknown };
    const recorded: RecordedError = {
      name: typeof error.name === 'string' ? error.name : 'Error',
      message: String(error.message ?? '').slice(0, messageLengthMax),
    };
    if (typeof error.code === 'string') recorded.code = error.code;
    const fields = jsonFields(error.fields);
    if (fields !== undefined) recorded.fields = fields;
    return recorded;
  }
  return { name: 'NonError', message: describeThrown(thrown).slice(0, messageLengthMax) };
}

function jsonFields(fields: unknown): { [key: string]: JsonValue } | undefined {
  if (typeof fields !== 'object' || fields === null) return undefined;
  try {
    encodePayload(fields);
    return fields as { [key: string]: JsonValue };
  } catch {
    return undefined;
  }
}

function describeThrown(thrown: unknown): string {
  if (typeof thrown === 'string') return thrown;
  try {
    return `a non-Error value was thrown: ${encodePayload(thrown)}`;
  } catch {
    return `a non-Error value was thrown: ${String(thrown)}`;
  }
}
