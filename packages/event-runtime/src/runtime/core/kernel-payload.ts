import type { StoredEvent } from '../../envelope.js';
import { ErrorCode, LoomError } from '../../errors.js';
import type { KernelEventType } from './kernel-events.js';
import {
  type FieldKind,
  type FieldShape,
  type KernelPayloads,
  payloadShapes,
} from './payload-shapes.js';

/**
 * The checks of a kernel event's payload against the shape its type has in `payloadShapes`, so a
 * fold never takes a hole in the log for data. The table is read once, at module load, and each
 * event type gets one function made from its row: the source of a check written by hand (each
 * field read by its name, a `typeof` or two, nothing allocated on the good path), compiled with
 * `new Function`. Nothing is interpreted per event. Every failed check throws `LOG_CORRUPT`
 * naming the execution, the sequence, the type and the field.
 *
 * Why generated source and not closures per field kind: closures made from one function literal
 * share their call and property-load feedback, so V8 sees every field of every type at one site
 * and inlines none of it; the fold then ran 1.3–1.5× slower than the hand-written checks it
 * replaces, where the generated ones run 0.8–0.95× (`execution-state.bench.ts`, ADR 0046). The
 * source is made only from the table's own constants (keys and messages quoted with
 * `JSON.stringify`), never from a log. Where code generation is off (`node
 * --disallow-code-generation-from-strings`), the same checks run as closures: the same errors,
 * at that cost.
 */
type Payload = { readonly [key: string]: unknown };

/** Checks one field of `payload` (read from `event`); throws `LOG_CORRUPT` if it is not its kind. */
type FieldCheck = (event: StoredEvent, payload: Payload) => void;

/** Checks one event's payload against its type's shape; returns the payload. */
type TypeCheck = (event: StoredEvent) => Payload;

/** Checks `event`'s payload against its type's shape and returns it, typed. */
export type PayloadCheck<T extends KernelEventType> = (event: StoredEvent) => KernelPayloads[T];

/** What each kind must be, as the error says it (`payload.x must be …`). */
const expected: { readonly [K in FieldKind]: string } = {
  index: 'a non-negative integer',
  string: 'a string',
  'string-or-null': 'a string or null',
  number: 'a finite number',
  'number-or-null': 'a finite number',
  json: 'present',
  error: 'a recorded error ({name, message})',
  'child-status': "'completed', 'failed' or 'cancelled'",
  parent: '{executionId: string, index: integer}',
};

/** True when `value` is of `kind` (a recorded error's own fields are checked by `checkError`). */
function isKind(kind: FieldKind, value: unknown): boolean {
  switch (kind) {
    case 'index':
      return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
    case 'string':
      return typeof value === 'string';
    case 'string-or-null':
      return value === null || typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'number-or-null':
      return value === null || (typeof value === 'number' && Number.isFinite(value));
    case 'json':
      return value !== undefined;
    case 'error':
      return isRecordedError(value);
    case 'child-status':
      return value === 'completed' || value === 'failed' || value === 'cancelled';
    case 'parent':
      return isParentLink(value);
  }
}

function isRecordedError(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { name, message } = value as Payload;
  return typeof name === 'string' && typeof message === 'string';
}

function isParentLink(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { executionId, index } = value as Payload;
  return (
    typeof executionId === 'string' && typeof index === 'number' && Number.isSafeInteger(index)
  );
}

/** A recorded error's optional `code` and `fields`, once its name and message are strings. */
function checkErrorRest(event: StoredEvent, value: unknown, path: string): void {
  const { code, fields } = value as Payload;
  if (code !== undefined && typeof code !== 'string') {
    throw logCorrupt(event, `${path}.code`, 'a string');
  }
  if (fields !== undefined && (typeof fields !== 'object' || fields === null)) {
    throw logCorrupt(event, `${path}.fields`, 'an object');
  }
}

/** The fallback checker of one field (see the module's comment), undefined when unchecked. */
function fieldCheck(key: string, shape: FieldShape): FieldCheck | undefined {
  if (shape === 'unread' || shape === 'json?') return undefined;
  const path = `payload.${key}`;
  if (shape === 'outcome-error') {
    return (event, payload) => {
      const value = payload[key];
      if (value === undefined && payload.status === 'completed') return;
      if (!isRecordedError(value)) throw logCorrupt(event, path, expected.error);
      checkErrorRest(event, value, path);
    };
  }
  const optional = shape.endsWith('?');
  const kind = (optional ? shape.slice(0, -1) : shape) as FieldKind;
  return (event, payload) => {
    const value = payload[key];
    if (optional && value === undefined) return;
    if (!isKind(kind, value)) throw logCorrupt(event, path, expected[kind]);
    if (kind === 'error') checkErrorRest(event, value, path);
  };
}

/** The fallback check of one event type: each field's checker, in the table's order. */
function typeClosure(shape: { readonly [key: string]: FieldShape }): TypeCheck {
  const checks: FieldCheck[] = [];
  for (const [key, field] of Object.entries(shape)) {
    const check = fieldCheck(key, field);
    if (check !== undefined) checks.push(check);
  }
  return (event) => {
    const payload = payloadOf(event);
    for (const check of checks) check(event, payload);
    return payload;
  };
}

/** The event's payload as an object (an array, a scalar or null is corrupt). */
function payloadOf(event: StoredEvent): Payload {
  const payload: unknown = event.payload;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw logCorrupt(event, 'payload', 'an object');
  }
  return payload as Payload;
}

/** The test that `v` (a local holding the field) is NOT of `kind`, as JavaScript source. */
function failsKind(kind: FieldKind, v: string): string {
  switch (kind) {
    case 'index':
      return `typeof ${v} !== 'number' || !Number.isSafeInteger(${v}) || ${v} < 0`;
    case 'string':
      return `typeof ${v} !== 'string'`;
    case 'string-or-null':
      return `${v} !== null && typeof ${v} !== 'string'`;
    case 'number':
      return `typeof ${v} !== 'number' || !Number.isFinite(${v})`;
    case 'number-or-null':
      return `${v} !== null && (typeof ${v} !== 'number' || !Number.isFinite(${v}))`;
    case 'json':
      return `${v} === undefined`;
    case 'error':
      return `!isRecordedError(${v})`;
    case 'child-status':
      return `${v} !== 'completed' && ${v} !== 'failed' && ${v} !== 'cancelled'`;
    case 'parent':
      return `!isParentLink(${v})`;
  }
}

/** The body of one event type's check, from its row: a `const` and an `if` per checked field. */
function typeSource(shape: { readonly [key: string]: FieldShape }): string {
  const lines = ['const p = payloadOf(event);'];
  let n = 0;
  for (const [key, field] of Object.entries(shape)) {
    if (field === 'unread' || field === 'json?') continue;
    const v = `v${n++}`;
    const path = JSON.stringify(`payload.${key}`);
    lines.push(`const ${v} = p[${JSON.stringify(key)}];`);
    if (field === 'outcome-error') {
      lines.push(
        `if (!(${v} === undefined && p.status === 'completed')) {`,
        `  if (!isRecordedError(${v})) throw logCorrupt(event, ${path}, ${JSON.stringify(expected.error)});`,
        `  checkErrorRest(event, ${v}, ${path});`,
        '}',
      );
      continue;
    }
    const optional = field.endsWith('?');
    const kind = (optional ? field.slice(0, -1) : field) as FieldKind;
    const guard = optional ? `${v} !== undefined && (${failsKind(kind, v)})` : failsKind(kind, v);
    lines.push(
      `if (${guard}) throw logCorrupt(event, ${path}, ${JSON.stringify(expected[kind])});`,
    );
    if (kind === 'error')
      lines.push(`if (${v} !== undefined) checkErrorRest(event, ${v}, ${path});`);
  }
  lines.push('return p;');
  return lines.join('\n');
}

/** The generated check of one event type: the source `typeSource` writes for its row. */
function typeFunction(shape: { readonly [key: string]: FieldShape }): TypeCheck {
  const make = new Function(
    'payloadOf',
    'logCorrupt',
    'isRecordedError',
    'isParentLink',
    'checkErrorRest',
    `return function checkPayload(event) {\n${typeSource(shape)}\n};`,
  ) as (...helpers: unknown[]) => TypeCheck;
  return make(payloadOf, logCorrupt, isRecordedError, isParentLink, checkErrorRest);
}

/** True when this process may compile source at run time (not so under a code-generation ban). */
function canGenerate(): boolean {
  try {
    return new Function('return true')() === true;
  } catch {
    return false;
  }
}

/**
 * The check of every kernel event type, made from `payloadShapes`: generated functions, or the
 * closures with `generate: false` (and where code generation is off). Exported for the test that
 * holds the two to the same errors; the kernel uses {@link checkPayload}.
 */
export function compilePayloadChecks(generate: boolean): {
  readonly [T in KernelEventType]: PayloadCheck<T>;
} {
  const checks: { [type: string]: TypeCheck } = {};
  for (const [type, shape] of Object.entries(payloadShapes)) {
    checks[type] = generate ? typeFunction(shape) : typeClosure(shape);
  }
  return checks as unknown as { readonly [T in KernelEventType]: PayloadCheck<T> };
}

/**
 * The payload check of each kernel event type, made from `payloadShapes` once: `checkPayload[
 * EventType.stepCompleted](event)` returns the event's payload typed as a `StepCompletedPayload`,
 * or throws `LOG_CORRUPT` naming the first field (in the table's order) that is not what its
 * shape says. The payload is returned as it is, not copied.
 */
export const checkPayload = compilePayloadChecks(canGenerate());

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
