import { createHash } from 'node:crypto';

/**
 * The hash of one event: sha-256 (hex) over the previous event's hash and the event's stored
 * form. Every backend computes it with this one function, so a log copied between backends
 * still verifies.
 */
export function eventHash(
  prevHash: string | null,
  executionId: string,
  sequence: number,
  type: string,
  at: number,
  payloadText: string,
): string {
  return createHash('sha256')
    .update(`${prevHash ?? ''}\n${executionId}\n${sequence}\n${type}\n${at}\n`)
    .update(payloadText)
    .digest('hex');
}
