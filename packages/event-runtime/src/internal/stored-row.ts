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

/** The stored form of an event a backend just chained (`chainEvents`/`admitAppend`), payload as text. */
export function storedRowOf(event: StoredEvent, payloadText: string): StoredRow {
  return {
    executionId: event.executionId,
    sequence: event.sequence,
    type: event.type,
    at: event.at,
    payloadText,
    position: event.position,
    prevHash: event.prevHash,
    hash: event.hash,
  };
}
