import type {
  AppendGuard,
  EventEnvelope,
  ExecutionStatus,
  JsonValue,
  SettledAs,
  StoredEvent,
} from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import { waitKindBits } from '../wait-kinds.js';
import { checkExecutionId } from './check-execution-id.js';
import { encodedTextOf } from './encoded-payloads.js';
import { eventHash } from './hash-chain.js';
import { encodePayload } from './json-codec.js';
import { type PreparedSignal, prepareSignal } from './prepare-signal.js';
import { checkWellFormed } from './well-formed-text.js';

export { checkExecutionId };

/** One validated event, payload already in its stored text form. */
export interface PreparedEvent {
  sequence: number;
  type: string;
  at: number;
  payload: JsonValue;
  payloadText: string;
}

/** A validated append: one execution, contiguous sequences, encoded payloads. */
export interface PreparedAppend {
  executionId: string;
  firstSequence: number;
  events: PreparedEvent[];
  fenceEpoch: number | undefined;
  /** The index update to make with the events, if any. */
  status: IndexUpdate | undefined;
  /**
   * A suspension's guard (`AppendGuard.wakeOnSignalsAfter`): the store makes it due at once when
   * the inbox has a newer signal (see {@link guardedWakeAtMs}). Undefined without one.
   */
  wakeOnSignalsAfter: number | undefined;
  /**
   * A settling append's signal to another execution (`AppendGuard.notify`), delivered in the same
   * write and skipped when its target is missing or settled. Undefined without one.
   */
  notify: PreparedSignal | undefined;
}

/**
 * The execution index row an append writes. `flow`, `version`, `startedBy` and `createdAtMs` are only written
 * when the append creates the row (its `execution.started`); later appends change the rest.
 */
export interface IndexUpdate {
  status: ExecutionStatus;
  wakeAtMs: number | null;
  /**
   * A suspension's `waitingFor` as bits of `waitKindBits` (the `waiting_for` column); null when
   * the guard gave none or the status is not `suspended`.
   */
  waitingFor: number | null;
  settledAs: SettledAs | null;
  flow: string | null;
  version: string | null;
  /**
   * The node that started the execution and leases it only later (a lazy start): the `node` of
   * `execution.started`, null when it has none. Recovery reads a dead starter's unleased
   * executions as orphans at once.
   */
  startedBy: string | null;
  createdAtMs: number;
  /** The `at` of the append's last event. */
  updatedAtMs: number;
}

/** The kernel's event types the index reads (kernel-events.ts names them for the runtime). */
const startedType = 'execution.started';
const terminalTypes: ReadonlyMap<string, SettledAs> = new Map([
  ['execution.completed', 'completed'],
  ['execution.failed', 'failed'],
  ['execution.cancelled', 'cancelled'],
  ['execution.continued_as_new', 'continued'],
]);

const envelopeKeys = new Set(['executionId', 'sequence', 'type', 'payload', 'at']);
const guardKeys = new Set([
  'fenceEpoch',
  'status',
  'wakeAtMs',
  'wakeOnSignalsAfter',
  'waitingFor',
  'notify',
]);
const statuses = new Set(['running', 'suspended', 'settled']);

function invalid(message: string, fields: Record<string, unknown> = {}): never {
  throw new LoomError(ErrorCode.INVALID_ENVELOPE, message, fields);
}

/** Validates a sequence number (a non-negative safe integer). */
export function checkSequence(sequence: unknown, what = 'sequence'): number {
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 0) {
    invalid(`${what} must be a non-negative integer, got ${describe(sequence)}`);
  }
  return sequence;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  return typeof value;
}

/**
 * Validates `append`'s arguments and encodes payloads. Throws a typed error (and the caller
 * writes nothing) on the first problem.
 */
export function prepareAppend(
  envelopes: readonly EventEnvelope[],
  guard: AppendGuard | undefined,
  nowMs: number,
): PreparedAppend {
  if (!Array.isArray(envelopes) || envelopes.length === 0) {
    invalid('append needs a non-empty array of envelopes');
  }
  if (envelopes.length > Limits.eventsPerAppendMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `append got ${envelopes.length} envelopes, over eventsPerAppendMax (${Limits.eventsPerAppendMax}): split it`,
      { limit: 'eventsPerAppendMax', actual: envelopes.length },
    );
  }
  const fenceEpoch = checkGuard(guard);
  const guarded = checkStatus(guard);
  const first = envelopes[0] as EventEnvelope;
  const executionId = checkExecutionId(first?.executionId);
  const firstSequence = checkSequence(first?.sequence);
  const events: PreparedEvent[] = new Array(envelopes.length);
  for (let index = 0; index < envelopes.length; index++) {
    events[index] = prepareOne(envelopes[index], index, executionId, firstSequence + index, nowMs);
  }
  return {
    executionId,
    firstSequence,
    events,
    fenceEpoch,
    status: indexUpdate(guarded, firstSequence, events),
    wakeOnSignalsAfter: checkSignalsGuard(guard),
    notify: checkNotify(guard, executionId, nowMs),
  };
}

/** `guard.notify`: a valid signal to another execution, only with `status: 'settled'`. */
function checkNotify(
  guard: AppendGuard | undefined,
  executionId: string,
  nowMs: number,
): PreparedSignal | undefined {
  if (guard?.notify === undefined) return undefined;
  if (guard.status !== 'settled') invalid('guard.notify is only meaningful with status settled');
  const notify = prepareSignal(guard.notify, nowMs);
  if (notify.executionId === executionId) {
    invalid('guard.notify must name another execution than the one appended to', { executionId });
  }
  return notify;
}

/** `guard.wakeOnSignalsAfter`: a non-negative integer, only with `status: 'suspended'`. */
function checkSignalsGuard(guard: AppendGuard | undefined): number | undefined {
  const after = guard?.wakeOnSignalsAfter;
  if (after === undefined) return undefined;
  checkSequence(after, 'guard.wakeOnSignalsAfter');
  if (guard?.status !== 'suspended') {
    invalid('guard.wakeOnSignalsAfter is only meaningful with status suspended');
  }
  return after;
}

/**
 * The wake time a suspension's index row gets: its own, or, when its guard saw fewer inbox
 * signals than the inbox holds (`lastSignalId`, the inbox's newest id), the append's time (due
 * at once) if that is earlier. What every backend computes in the write that suspends (ADR 0033).
 */
export function guardedWakeAtMs(
  update: IndexUpdate,
  wakeOnSignalsAfter: number | undefined,
  lastSignalId: number,
): number | null {
  if (wakeOnSignalsAfter === undefined || lastSignalId <= wakeOnSignalsAfter)
    return update.wakeAtMs;
  return update.wakeAtMs === null
    ? update.updatedAtMs
    : Math.min(update.wakeAtMs, update.updatedAtMs);
}

/**
 * What the append writes to the execution index: the guard's status, or `running` for an append
 * that starts an execution (a start is a status change, so it costs no extra write), with the
 * facts the batch itself carries. Undefined when the index is left alone.
 */
function indexUpdate(
  guarded: Guarded | undefined,
  firstSequence: number,
  events: readonly PreparedEvent[],
): IndexUpdate | undefined {
  const head = events[0] as PreparedEvent;
  const starts = firstSequence === 0 && head.type === startedType;
  if (guarded === undefined && !starts) return undefined;
  const { status, wakeAtMs, waitingFor } = guarded ?? {
    status: 'running' as const,
    wakeAtMs: null,
    waitingFor: null,
  };
  let settledAs: SettledAs | null = null;
  if (status === 'settled') {
    for (let index = events.length - 1; index >= 0 && settledAs === null; index--) {
      settledAs = terminalTypes.get((events[index] as PreparedEvent).type) ?? null;
    }
  }
  const started = starts ? head.payload : null;
  const fields =
    typeof started === 'object' && started !== null && !Array.isArray(started) ? started : {};
  return {
    status,
    wakeAtMs,
    waitingFor,
    settledAs,
    flow: typeof fields.flow === 'string' ? fields.flow : null,
    version: typeof fields.version === 'string' ? fields.version : null,
    startedBy: typeof fields.node === 'string' ? fields.node : null,
    createdAtMs: head.at,
    updatedAtMs: (events[events.length - 1] as PreparedEvent).at,
  };
}

/** A guard's checked status, wake time and wait kinds (as bits). */
interface Guarded {
  status: ExecutionStatus;
  wakeAtMs: number | null;
  waitingFor: number | null;
}

/** `guard.waitingFor`: known wait kinds, only with `status: 'suspended'`; their bits. */
function checkWaitingFor(guard: AppendGuard): number | null {
  const kinds = guard.waitingFor;
  if (kinds === undefined) return null;
  if (guard.status !== 'suspended') {
    invalid('guard.waitingFor is only meaningful with status suspended');
  }
  if (!Array.isArray(kinds)) invalid('guard.waitingFor must be an array of wait kinds');
  let bits = 0;
  for (const kind of kinds) {
    const bit =
      typeof kind === 'string' && Object.hasOwn(waitKindBits, kind)
        ? waitKindBits[kind as keyof typeof waitKindBits]
        : undefined;
    if (bit === undefined) {
      invalid(
        `guard.waitingFor has ${describe(kind)}; a wait kind is timer, signal, approval, question or child`,
      );
    }
    bits |= bit;
  }
  return bits;
}

function checkStatus(guard: AppendGuard | undefined): Guarded | undefined {
  if (guard?.status === undefined) {
    if (guard?.wakeAtMs !== undefined) invalid('guard.wakeAtMs needs guard.status');
    if (guard?.waitingFor !== undefined) invalid('guard.waitingFor needs guard.status');
    return undefined;
  }
  if (!statuses.has(guard.status)) {
    invalid(`guard.status must be running, suspended or settled, got ${describe(guard.status)}`);
  }
  const wakeAtMs = guard.wakeAtMs ?? null;
  if (wakeAtMs !== null) {
    checkSequence(wakeAtMs, 'guard.wakeAtMs');
    if (guard.status !== 'suspended')
      invalid('guard.wakeAtMs is only meaningful with status suspended');
  }
  return { status: guard.status, wakeAtMs, waitingFor: checkWaitingFor(guard) };
}

function checkGuard(guard: AppendGuard | undefined): number | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard !== 'object' || guard === null) invalid('the append guard must be an object');
  for (const key of Object.keys(guard)) {
    if (!guardKeys.has(key)) invalid(`the append guard has an unknown field '${key}'`);
  }
  if (guard.fenceEpoch === undefined) return undefined;
  return checkSequence(guard.fenceEpoch, 'guard.fenceEpoch');
}

function prepareOne(
  envelope: EventEnvelope | undefined,
  index: number,
  executionId: string,
  expectedSequence: number,
  nowMs: number,
): PreparedEvent {
  if (typeof envelope !== 'object' || envelope === null || Array.isArray(envelope)) {
    invalid(`envelope ${index} is not an object`);
  }
  // for-in, not Object.keys: no array per event (inherited keys are skipped, as keys() does).
  for (const key in envelope) {
    if (!envelopeKeys.has(key) && Object.hasOwn(envelope, key)) {
      invalid(`envelope ${index} has an unknown field '${key}'`, { executionId, path: key });
    }
  }
  if (envelope.executionId !== executionId) {
    invalid(
      `envelope ${index} is for execution ${describe(envelope.executionId)}; one append takes ` +
        `events of one execution (${executionId})`,
      { executionId },
    );
  }
  const sequence = checkSequence(envelope.sequence);
  if (sequence !== expectedSequence) {
    invalid(
      `envelope ${index} has sequence ${sequence}, expected ${expectedSequence}: the envelopes ` +
        'of one append must have consecutive sequences',
      { executionId, expected: expectedSequence, actual: sequence },
    );
  }
  const type = envelope.type;
  if (typeof type !== 'string' || type.length === 0) {
    invalid(`envelope ${index} needs a non-empty string type`, { executionId, sequence });
  }
  if (type.length > Limits.eventTypeLengthMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `event type is ${type.length} characters, over eventTypeLengthMax (${Limits.eventTypeLengthMax})`,
      { limit: 'eventTypeLengthMax', executionId, sequence },
    );
  }
  checkWellFormed(type, 'type', ErrorCode.INVALID_ENVELOPE, { executionId, sequence });
  const at = envelope.at ?? nowMs;
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) {
    invalid(`envelope ${index} has 'at' ${describe(at)}; it must be epoch milliseconds`, {
      executionId,
      sequence,
    });
  }
  if (!('payload' in envelope)) {
    invalid(`envelope ${index} has no payload (use null for none)`, { executionId, sequence });
  }
  const payloadText = encodedTextOf(envelope) ?? encodePayload(envelope.payload, executionId);
  if (payloadText.length > Limits.payloadBytesMax / 3) {
    const bytes = Buffer.byteLength(payloadText, 'utf8');
    if (bytes > Limits.payloadBytesMax) {
      throw new LoomError(
        ErrorCode.LIMIT_EXCEEDED,
        `payload of event ${sequence} is ${bytes} bytes, over payloadBytesMax ` +
          `(${Limits.payloadBytesMax}): move large content to a content store and keep a reference`,
        { limit: 'payloadBytesMax', executionId, sequence, actual: bytes },
      );
    }
  }
  return { sequence, type, at, payload: envelope.payload, payloadText };
}

/**
 * Chains hashes over a prepared append given the hash of the event before it, and returns the
 * events as stored, `position` still 0: the backend sets it once the database assigned it.
 */
export function chainEvents(prepared: PreparedAppend, prevHash: string | null): StoredEvent[] {
  const stored: StoredEvent[] = new Array(prepared.events.length);
  let previous = prevHash;
  for (let index = 0; index < prepared.events.length; index++) {
    const event = prepared.events[index] as PreparedEvent;
    const hash = eventHash(
      previous,
      prepared.executionId,
      event.sequence,
      event.type,
      event.at,
      event.payloadText,
    );
    stored[index] = {
      executionId: prepared.executionId,
      sequence: event.sequence,
      type: event.type,
      payload: event.payload,
      at: event.at,
      position: 0,
      prevHash: previous,
      hash,
    };
    previous = hash;
  }
  return stored;
}
