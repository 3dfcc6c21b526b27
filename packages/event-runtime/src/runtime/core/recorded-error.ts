import type { JsonValue } from '../../envelope.js';
import { encodePayload } from '../../internal/json-codec.js';
import type { RecordedError } from './kernel-events.js';

const messageLengthMax = 4_000;
/** Characters of a recorded stack: enough for the frames that say where, bounded like a message. */
const stackLengthMax = 4_000;
/** Characters of a recorded error's name or code: they are labels, not content. */
const labelLengthMax = 200;
/** Characters of a recorded error's fields as JSON: bounded so a failure always fits its event. */
const fieldsLengthMax = 16_000;

/** What the log keeps for a thrown value nothing can be read from (every access throws). */
const unreadable: RecordedError = {
  name: 'NonError',
  message: 'a value was thrown that could not be read (reading its name, message or text threw)',
};

/**
 * Turns anything a flow or an effect threw into the plain record the log keeps. Non-Error
 * throws (a string, an object, undefined) become `{name: 'NonError', message: <what was thrown>}`.
 * Never throws: a value whose getters, `toString` or proxy traps throw is described by what
 * could be read, or by a fixed description, so recording a failure cannot fail.
 */
export function recordError(thrown: unknown): RecordedError {
  try {
    return isErrorLike(thrown) ? recordErrorLike(thrown) : recordNonError(thrown);
  } catch {
    return { ...unreadable };
  }
}

function isErrorLike(thrown: unknown): thrown is Error & { code?: unknown; fields?: unknown } {
  if (thrown instanceof Error) return true;
  // A LoomError from another copy of the package (instanceof fails across copies).
  const candidate = thrown as { name?: unknown; code?: unknown } | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    candidate.name === 'LoomError' &&
    typeof candidate.code === 'string'
  );
}

function recordErrorLike(error: Error & { code?: unknown; fields?: unknown }): RecordedError {
  const name = read(() => error.name);
  const message = read(() => error.message);
  const recorded: RecordedError = {
    name: typeof name === 'string' ? name.slice(0, labelLengthMax) : 'Error',
    message: text(message),
  };
  const code = read(() => error.code);
  if (typeof code === 'string') recorded.code = code.slice(0, labelLengthMax);
  const fields = jsonFields(read(() => error.fields));
  if (fields !== undefined) recorded.fields = fields;
  const stack = read(() => error.stack);
  if (typeof stack === 'string' && stack.length > 0)
    recorded.stack = stack.slice(0, stackLengthMax);
  return recorded;
}

function recordNonError(thrown: unknown): RecordedError {
  if (typeof thrown === 'string') {
    return { name: 'NonError', message: thrown.slice(0, messageLengthMax) };
  }
  let description: string;
  try {
    description = `a non-Error value was thrown: ${encodePayload(thrown)}`;
  } catch {
    description = `a non-Error value was thrown: ${String(thrown)}`;
  }
  return { name: 'NonError', message: description.slice(0, messageLengthMax) };
}

/** A message as text, bounded; a message whose `toString` throws reads as a fixed one. */
function text(message: unknown): string {
  if (message === undefined || message === null) return '';
  const value = read(() => String(message));
  return typeof value === 'string'
    ? value.slice(0, messageLengthMax)
    : 'the error message could not be read (its toString threw)';
}

function jsonFields(fields: unknown): { [key: string]: JsonValue } | undefined {
  if (typeof fields !== 'object' || fields === null) return undefined;
  try {
    const encoded = encodePayload(fields);
    if (encoded.length > fieldsLengthMax) return undefined;
    // Decoded, so the record holds plain data read once (not the live object and its getters).
    return JSON.parse(encoded) as { [key: string]: JsonValue };
  } catch {
    return undefined;
  }
}

/** The value `get` returns, or undefined if reading it threw (a getter, a proxy trap). */
function read(get: () => unknown): unknown {
  try {
    return get();
  } catch {
    return undefined;
  }
}
