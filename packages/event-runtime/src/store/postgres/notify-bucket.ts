import { ErrorCode, LoomError } from '../../errors.js';

/** Most notify buckets a store may use: each is one LISTEN on the listener connection. */
export const notifyBucketsMax = 1024;

/** Validates `notifyBuckets` (throws `INVALID_ARGUMENT`). */
export function checkNotifyBuckets(buckets: unknown): number {
  if (typeof buckets !== 'number' || !Number.isInteger(buckets) || buckets < 1) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `notifyBuckets must be an integer between 1 and ${notifyBucketsMax}, got ${String(buckets)}`,
      { path: 'notifyBuckets' },
    );
  }
  if (buckets > notifyBucketsMax) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `notifyBuckets is ${buckets}, over notifyBucketsMax (${notifyBucketsMax})`,
      { path: 'notifyBuckets', limit: 'notifyBucketsMax' },
    );
  }
  return buckets;
}

/**
 * The bucket of an execution: FNV-1a (32 bit) over its UTF-16 code units, mod `buckets`. Stable
 * across processes and versions, because every writer and listener of a schema must agree
 * (and so must use the same `notifyBuckets`).
 */
export function bucketOf(executionId: string, buckets: number): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < executionId.length; index++) {
    hash ^= executionId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % buckets;
}

/** The NOTIFY channel of a bucket: `<schema>_<bucket>`. */
export function channelName(schema: string, bucket: number): string {
  return `${schema}_${bucket}`;
}
