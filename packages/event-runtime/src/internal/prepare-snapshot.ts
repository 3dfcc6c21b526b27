import { ErrorCode, LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import type { Snapshot } from '../snapshot-store.js';
import { encodePayload } from './json-codec.js';
import { checkExecutionId, checkSequence } from './prepare-append.js';

/** A validated snapshot, state already in the exact JSON text every backend stores. */
export interface PreparedSnapshot {
  executionId: string;
  sequence: number;
  at: number;
  stateText: string;
}

const snapshotKeys = new Set(['executionId', 'sequence', 'state', 'at']);

function invalid(message: string, fields: Record<string, unknown> = {}): never {
  throw new LoomError(ErrorCode.INVALID_ENVELOPE, message, fields);
}

/**
 * Validates a snapshot and encodes its state. Throws `INVALID_ENVELOPE` (malformed snapshot),
 * `LIMIT_EXCEEDED` (id length, nesting depth, `snapshotBytesMax`) or `PAYLOAD_NOT_JSON`, always
 * before the caller writes anything.
 */
export function prepareSnapshot(snapshot: Snapshot): PreparedSnapshot {
  if (typeof snapshot !== 'object' || snapshot === null || Array.isArray(snapshot)) {
    invalid('a snapshot must be an object { executionId, sequence, state, at }');
  }
  const executionId = checkExecutionId(snapshot.executionId);
  for (const key of Object.keys(snapshot)) {
    if (!snapshotKeys.has(key)) {
      invalid(`the snapshot has an unknown field '${key}'`, { executionId, path: key });
    }
  }
  const sequence = checkSequence(snapshot.sequence);
  const at = snapshot.at;
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) {
    invalid(`the snapshot's 'at' must be epoch milliseconds, got ${String(at)}`, {
      executionId,
      sequence,
    });
  }
  if (!('state' in snapshot)) {
    invalid('the snapshot has no state (use null for none)', { executionId, sequence });
  }
  const stateText = encodePayload(snapshot.state, executionId, 'snapshotBytesMax');
  // UTF-8 takes at most 3 bytes per UTF-16 unit, so short texts need no byte count.
  if (stateText.length > Limits.snapshotBytesMax / 3) {
    const bytes = Buffer.byteLength(stateText, 'utf8');
    if (bytes > Limits.snapshotBytesMax) {
      throw new LoomError(
        ErrorCode.LIMIT_EXCEEDED,
        `snapshot state of execution ${executionId} at sequence ${sequence} is ${bytes} bytes, ` +
          `over snapshotBytesMax (${Limits.snapshotBytesMax}): keep large data out of flow state ` +
          '(a content store reference) or snapshot less of it',
        { limit: 'snapshotBytesMax', executionId, sequence, actual: bytes },
      );
    }
  }
  return { executionId, sequence, at, stateText };
}
