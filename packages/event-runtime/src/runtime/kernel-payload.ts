import type { JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import type {
  ChildCompletedPayload,
  ExecutionStartedPayload,
  RecordedError,
} from './kernel-events.js';

/**
 * Reads the fields of a kernel event's payload, checking each against the shape its type
 * requires, so a fold never takes a hole in the log for data. Hand-written (no schema library):
 * it runs for every event of every load, and costs a few `typeof`s. Every check failure throws
 * `LOG_CORRUPT` naming the execution, the sequence, the type and the field.
 */
export class KernelPayload {
  private readonly fields: { readonly [key: string]: unknown };

  constructor(readonly event: StoredEvent) {
    const payload: unknown = event.payload;
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      throw logCorrupt(event, 'payload', 'an object');
    }
    this.fields = payload as { readonly [key: string]: unknown };
  }

  /** An operation's position in the flow: a non-negative integer. */
  index(): number {
    const value = this.fields.index;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw logCorrupt(this.event, 'payload.index', 'a non-negative integer');
    }
    return value;
  }

  string(key: string): string {
    const value = this.fields[key];
    if (typeof value !== 'string') throw logCorrupt(this.event, `payload.${key}`, 'a string');
    return value;
  }

  optionalString(key: string): string | undefined {
    return this.fields[key] === undefined ? undefined : this.string(key);
  }

  number(key: string): number {
    const value = this.fields[key];
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw logCorrupt(this.event, `payload.${key}`, 'a finite number');
    }
    return value;
  }

  numberOrNull(key: string): number | null {
    return this.fields[key] === null ? null : this.number(key);
  }

  /** Any JSON value, `null` included, but present: a missing value is a hole, not a null. */
  value(key: string): JsonValue {
    const value = this.fields[key];
    if (value === undefined) throw logCorrupt(this.event, `payload.${key}`, 'present');
    return value as JsonValue;
  }

  optionalValue(key: string): JsonValue | undefined {
    return this.fields[key] as JsonValue | undefined;
  }

  error(key: string): RecordedError {
    const value = this.fields[key];
    if (
      typeof value !== 'object' ||
      value === null ||
      typeof (value as RecordedError).name !== 'string' ||
      typeof (value as RecordedError).message !== 'string'
    ) {
      throw logCorrupt(this.event, `payload.${key}`, 'a recorded error ({name, message})');
    }
    const { code, fields } = value as RecordedError;
    if (code !== undefined && typeof code !== 'string') {
      throw logCorrupt(this.event, `payload.${key}.code`, 'a string');
    }
    if (fields !== undefined && (typeof fields !== 'object' || fields === null)) {
      throw logCorrupt(this.event, `payload.${key}.fields`, 'an object');
    }
    return value as RecordedError;
  }

  optionalError(key: string): RecordedError | undefined {
    return this.fields[key] === undefined ? undefined : this.error(key);
  }

  /** `execution.started`: the flow, its version and input, and where it came from. */
  started(): ExecutionStartedPayload {
    const version = this.fields.version;
    if (version !== null && typeof version !== 'string') {
      throw logCorrupt(this.event, 'payload.version', 'a string or null');
    }
    const started: ExecutionStartedPayload = {
      flow: this.string('flow'),
      version,
      input: this.value('input'),
    };
    const parent = this.fields.parent;
    if (parent !== undefined) {
      const link = parent as { executionId?: unknown; index?: unknown };
      if (
        typeof parent !== 'object' ||
        parent === null ||
        typeof link.executionId !== 'string' ||
        typeof link.index !== 'number' ||
        !Number.isSafeInteger(link.index)
      ) {
        throw logCorrupt(this.event, 'payload.parent', '{executionId: string, index: integer}');
      }
      started.parent = { executionId: link.executionId, index: link.index };
    }
    const continuedFrom = this.optionalString('continuedFrom');
    if (continuedFrom !== undefined) started.continuedFrom = continuedFrom;
    const rootId = this.optionalString('rootId');
    if (rootId !== undefined) started.rootId = rootId;
    if (this.fields.generation !== undefined) {
      const generation = this.fields.generation;
      if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 0) {
        throw logCorrupt(this.event, 'payload.generation', 'a non-negative integer');
      }
      started.generation = generation;
    }
    return started;
  }

  /** `child.completed`: the child's outcome; a failed or cancelled one carries its error. */
  childStatus(): ChildCompletedPayload['status'] {
    const status = this.fields.status;
    if (status !== 'completed' && status !== 'failed' && status !== 'cancelled') {
      throw logCorrupt(this.event, 'payload.status', "'completed', 'failed' or 'cancelled'");
    }
    return status;
  }
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
