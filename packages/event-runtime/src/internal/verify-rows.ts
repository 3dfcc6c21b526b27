import type { VerifyResult } from '../event-store.js';
import { eventHash } from './hash-chain.js';
import type { StoredRow } from './stored-row.js';

/**
 * Recomputes the hash chain over an execution's rows (in sequence order, from 0) and says
 * where it first breaks: a gap, a link that does not point at its predecessor, or a hash that
 * does not match the stored form.
 */
export function verifyRows(executionId: string, rows: readonly StoredRow[]): VerifyResult {
  let previous: string | null = null;
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index] as StoredRow;
    const broken = (reason: string): VerifyResult => ({
      ok: false,
      executionId,
      events: rows.length,
      brokenAtSequence: row.sequence,
      reason,
    });
    if (row.sequence !== index) return broken(`expected sequence ${index}, found ${row.sequence}`);
    if (row.prevHash !== previous) {
      return broken(`prevHash does not point at the hash of sequence ${index - 1}`);
    }
    const expected = eventHash(
      previous,
      executionId,
      row.sequence,
      row.type,
      row.at,
      row.payloadText,
    );
    if (expected !== row.hash) return broken('the stored hash does not match the event as stored');
    previous = row.hash;
  }
  return { ok: true, executionId, events: rows.length, lastHash: previous };
}
