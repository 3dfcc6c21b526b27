import type { JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import type {
  ChildCompletedPayload,
  ExecutionStartedPayload,
  RecordedError,
} from './kernel-events.js';

/**
 * Checks of a kernel event's payload fields against the shape its type requires, so a fold
 * never takes a hole in the log for data. Hand-written (no schema library): they run for every
 * event of every load, so the caller reads each field by its literal name and hands the value
 * here, which costs a `typeof` or two and allocates nothing on the good path. Every failed check
 * throws `LOG_CORRUPT` naming the execution, the sequence, the type and the field.
 */
export type Payload = { readonly [key: string]: unknown };

/** The event's payload as an object (an array, a scalar or null is corrupt). */
export function payloadOf(event: StoredEvent): Payload {
  const payload: unknown = event.payload;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw logCorrupt(event, 'payload', 'an object');
  }
  return payload as Payload;
}

/** An operation's position in the flow: a non-negative integer. */
export function checkIndex(event: StoredEvent, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw logCorrupt(event, 'payload.index', 'a non-negative integer');
  }
  return value;
}

export function checkString(event: StoredEvent, value: unknown, key: string): string {
  if (typeof value !== 'string') throw logCorrupt(event, `payload.${key}`, 'a string');
  return value;
}

export function checkNumber(event: StoredEvent, value: unknown, key: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw logCorrupt(event, `payload.${key}`, 'a finite number');
  }
  return value;
}

export function checkNumberOrNull(event: StoredEvent, value: unknown, key: string): number | null {
  return value === null ? null : checkNumber(event, value, key);
}

/** Any JSON value, `null` included, but present: a missing value is a hole, not a null. */
export function checkPresent(event: StoredEvent, value: unknown, key: string): JsonValue {
  if (value === undefined) throw logCorrupt(event, `payload.${key}`, 'present');
  return value as JsonValue;
}

/** A recorded error: `{name, message}` strings, an optional string `code`, optional `fields`. */
export function checkError(event: StoredEvent, value: unknown, key: string): RecordedError {
  if (typeof value !== 'object' || value === null) {
    throw logCorrupt(event, `payload.${key}`, 'a recorded error ({name, message})');
  }
  const { name, message, code, fields } = value as { [key: string]: unknown };
  if (typeof name !== 'string' || typeof message !== 'string') {
    throw logCorrupt(event, `payload.${key}`, 'a recorded error ({name, message})');
  }
  if (code !== undefined && typeof code !== 'string') {
    throw logCorrupt(event, `payload.${key}.code`, 'a string');
  }
  if (fields !== undefined && (typeof fields !== 'object' || fields === null)) {
    throw logCorrupt(event, `payload.${key}.fields`, 'an object');
  }
  return value as RecordedError;
}

/** `execution.started`: the flow, its version and input, and where it came from. */
export function checkStarted(event: StoredEvent): ExecutionStartedPayload {
  const payload = payloadOf(event);
  const { version, parent, continuedFrom, rootId, generation } = payload;
  if (version !== null && typeof version !== 'string') {
    throw logCorrupt(event, 'payload.version', 'a string or null');
  }
  const started: ExecutionStartedPayload = {
    flow: checkString(event, payload.flow, 'flow'),
    version,
    input: checkPresent(event, payload.input, 'input'),
  };
  if (parent !== undefined) {
    const link = parent as { executionId?: unknown; index?: unknown } | null;
    if (
      typeof link !== 'object' ||
      link === null ||
      typeof link.executionId !== 'string' ||
      typeof link.index !== 'number' ||
      !Number.isSafeInteger(link.index)
    ) {
      throw logCorrupt(event, 'payload.parent', '{executionId: string, index: integer}');
    }
    started.parent = { executionId: link.executionId, index: link.index };
  }
  if (continuedFrom !== undefined) {
    started.continuedFrom = checkString(event, continuedFrom, 'continuedFrom');
  }
  if (rootId !== undefined) started.rootId = checkString(event, rootId, 'rootId');
  if (generation !== undefined) {
    if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 0) {
      throw logCorrupt(event, 'payload.generation', 'a non-negative integer');
    }
    started.generation = generation;
  }
  return started;
}

/** `child.completed`'s status. */
export function checkChildStatus(
  event: StoredEvent,
  value: unknown,
): ChildCompletedPayload['status'] {
  if (value !== 'completed' && value !== 'failed' && value !== 'cancelled') {
    throw logCorrupt(event, 'payload.status', "'completed', 'failed' or 'cancelled'");
  }
  return value;
}

/**
 * The error for a log the kernel cannot fold. Corruption is not an expected failure: the
 * execution stops here, and the message says where, so an operator can inspect that event.
 */
export function logCorrupt(event: StoredEvent, path: string, expected: string): LoomError {
  return new LoomError(
    ErrorCode.LOG_CORRUPT,
    `event ${event.sequence} (${event.type}) of execution ${event.executionId} is corrupt: ` +
      `${path} must be ${expected}. The log was changed outside Loom or by a broken writer; ` +
      'the execution cannot be resumed until that event is restored (from a backup)',
    {
      executionId: event.executionId,
      sequence: event.sequence,
      type: event.type,
      path,
      expected,
    },
  );
}
