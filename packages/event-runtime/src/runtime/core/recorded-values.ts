// The pure helpers of recording and replaying a value: the errors a step's and a child's failure
// become, a payload encoded once as the log stores it, and what the flow is handed back.
import type { JsonValue } from '../../envelope.js';
import { ErrorCode, isLoomError, LoomError, type LoomErrorFields } from '../../errors.js';
import { decodePayload, encodePayload } from '../../internal/json-codec.js';
import { Limits } from '../../limits.js';
import type { RecordedError } from './kernel-events.js';

/**
 * The error `ctx.step` throws when an effect threw (identical on replay): `fields.step`,
 * `fields.stepIndex`, `fields.attempts` (made in the step's last budget) and `fields.error`
 * (the last attempt's error as recorded: name, message, code, fields, stack).
 */
export function stepFailed(
  executionId: string,
  index: number,
  name: string,
  error: RecordedError | undefined,
  cause?: unknown,
  attempts = 1,
): LoomError {
  const after = attempts > 1 ? ` after ${attempts} attempts` : '';
  return new LoomError(
    ErrorCode.STEP_FAILED,
    `step ${index} ('${name}') of execution ${executionId} failed${after}: ${error?.message ?? 'unknown error'}`,
    { executionId, step: name, stepIndex: index, attempts, error: (error ?? null) as never },
    cause,
  );
}

/** The error `ctx.child` throws when the child failed or was cancelled (identical on replay). */
export function childFailed(
  executionId: string,
  childId: string,
  status: string,
  error: RecordedError | undefined,
): LoomError {
  return new LoomError(
    ErrorCode.CHILD_FAILED,
    `child execution ${childId} of ${executionId} ${status === 'cancelled' ? 'was cancelled' : 'failed'}: ${error?.message ?? ''}`,
    { executionId, childId, status, error: (error ?? null) as never },
  );
}

/**
 * Encodes an event payload once, when it is recorded, as the log will store it: refuses what
 * JSON cannot give back, and a payload over `payloadBytesMax` (the store limits the whole
 * payload, so the event's own fields count). Returns the text; hand it to `journal.record`, so
 * the append stores exactly it. `what` names the value in messages ("the result of step
 * 'charge'"); `fields` are added to the error's.
 *
 * Throws `PAYLOAD_NOT_JSON` or `LIMIT_EXCEEDED`.
 */
export function encodeRecorded(payload: object, what: string, fields: LoomErrorFields): string {
  let text: string;
  try {
    text = encodePayload(payload, fields.executionId);
  } catch (error) {
    if (isLoomError(error)) {
      throw new LoomError(
        error.code,
        `${what} cannot be stored: ${error.message}`,
        { ...error.fields, ...fields },
        error,
      );
    }
    // A getter or a proxy in the value threw while it was read.
    throw new LoomError(
      ErrorCode.PAYLOAD_NOT_JSON,
      `${what} cannot be stored: reading it threw. Return plain data (no getters or proxies)`,
      fields,
      error,
    );
  }
  // Fewer than max/3 UTF-16 units cannot make more than max UTF-8 bytes: skip the count.
  if (text.length > Limits.payloadBytesMax / 3) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > Limits.payloadBytesMax) {
      throw new LoomError(
        ErrorCode.LIMIT_EXCEEDED,
        `${what} is ${bytes} bytes, over payloadBytesMax (${Limits.payloadBytesMax}) counting ` +
          "its event's fields: move large content to a content store and keep a reference",
        { ...fields, limit: 'payloadBytesMax', actual: bytes },
      );
    }
  }
  return text;
}

/**
 * What the flow gets for a value the hot state holds (a replayed result). With snapshots on
 * (`keepResults`), a copy: the state goes into snapshots, and a flow that changes what it was
 * handed must not change what a resume from a later snapshot replays.
 */
export function replayedValue(value: JsonValue | undefined, keepResults: boolean): JsonValue {
  if (value === undefined) return null;
  return keepResults && typeof value === 'object' && value !== null
    ? structuredClone(value)
    : value;
}

/**
 * What the flow gets for `value`, recorded at `key` of a payload encoded to `text`: the value
 * decoded from that text, so the first run sees exactly what a replay will (no live object, no
 * extra array properties, no null prototypes; `undefined` is null). Primitives decode to
 * themselves, so they skip the parse.
 */
export function recordedValue(value: unknown, text: string, key: string): JsonValue {
  if (value === undefined) return null;
  if (typeof value !== 'object' || value === null) return value as JsonValue;
  return (decodePayload(text) as { [key: string]: JsonValue })[key] ?? null;
}
