import type { StoredEvent } from '../envelope.js';
import { decodePayload } from './json-codec.js';

/** An event exactly as a backend stores it (payload still as text). */
export interface StoredRow {
  executionId: string;
  sequence: number;
  type: string;
  at: number;
  payloadText: string;
  position: number;
  prevHash: string | null;
  hash: string;
}

/** Decodes a stored row into the event callers see. */
export function rowToEvent(row: StoredRow): StoredEvent {
  return {
    executionId: row.executionId,
    sequence: row.sequence,
    type: row.type,
    payload: decodePayload(row.payloadText),
    at: row.at,
    position: row.position,
    prevHash: row.prevHash,
    hash: row.hash,
  };
}
