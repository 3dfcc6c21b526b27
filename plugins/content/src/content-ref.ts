import { createHash } from 'node:crypto';
import type { JsonValue } from '@loom/event-runtime';
import { ContentErrorCode, invalidArgument, LoomError } from './errors.js';

/** A content key: `sha256:` and the 64 lowercase hex digits of the content's sha-256. */
export type ContentKey = `sha256:${string}`;

/**
 * What the log stores in place of an externalized payload field: the key of its content and the
 * content's size. Exactly these two fields, so no other value is mistaken for one.
 */
export interface ContentRef {
  $content: ContentKey;
  bytes: number;
}

/**
 * What a read returns in place of a reference whose content is gone (deleted, or never stored):
 * the reference's key and size, and `missing: true`. Test for it with {@link isMissingContent}.
 */
export interface MissingContent {
  $content: ContentKey;
  bytes: number;
  missing: true;
}

/** Limits of this package, named so an error can say which one was hit. */
export const ContentLimits = {
  /** Bytes of one piece of content a store accepts by default. 64 MiB: put bigger blobs in object storage. */
  contentBytesMax: 64 * 1024 * 1024,
  /** Default size from which a payload field moves to the content store (its UTF-8 JSON). */
  thresholdBytesDefault: 16 * 1024,
} as const;

const keyPattern = /^sha256:[0-9a-f]{64}$/;

/** The key of `bytes`: `sha256:<hex>`. */
export function contentKeyOf(bytes: Uint8Array): ContentKey {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** True when `value` is a well-formed content key. */
export function isContentKey(value: unknown): value is ContentKey {
  return typeof value === 'string' && keyPattern.test(value);
}

/** Throws `CONTENT_REF_INVALID` unless `value` is a well-formed content key. */
export function checkContentKey(value: unknown): ContentKey {
  if (isContentKey(value)) return value;
  const shown = typeof value === 'string' ? value.slice(0, 80) : typeof value;
  throw new LoomError(
    ContentErrorCode.CONTENT_REF_INVALID,
    `'${shown}' is not a content key: pass the $content of a ContentRef ('sha256:' and 64 lowercase hex digits)`,
    { ref: shown },
  );
}

/** Throws `INVALID_ARGUMENT` unless `value` is a list of well-formed keys (each `CONTENT_REF_INVALID`). */
export function checkContentKeys(value: unknown): readonly ContentKey[] {
  if (!Array.isArray(value))
    throw invalidArgument('refs', 'getMany takes an array of content keys');
  for (const key of value) checkContentKey(key);
  return value as ContentKey[];
}

/** Throws `INVALID_ARGUMENT` unless `bytes` is a Uint8Array, `CONTENT_TOO_LARGE` above `max`. */
export function checkContentBytes(bytes: unknown, max: number): Uint8Array {
  if (!(bytes instanceof Uint8Array))
    throw invalidArgument('bytes', 'put takes a Uint8Array (a Buffer is one)', typeof bytes);
  if (bytes.byteLength > max) {
    throw new LoomError(
      ContentErrorCode.CONTENT_TOO_LARGE,
      `content of ${bytes.byteLength} bytes is over contentBytesMax (${max}): store it elsewhere, or open the store with a larger contentBytesMax`,
      { limit: 'contentBytesMax', actual: bytes.byteLength, max },
    );
  }
  return bytes;
}

/** Throws `INVALID_ARGUMENT` unless `max` is a positive safe integer; returns it or the default. */
export function contentBytesMaxOption(max: unknown): number {
  if (max === undefined) return ContentLimits.contentBytesMax;
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1)
    throw invalidArgument('contentBytesMax', 'contentBytesMax must be a positive integer', max);
  return max;
}

/** True for a JSON object (not null, not an array): the payloads whose fields can move. */
export function isRecord(value: unknown): value is Record<string, JsonValue> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when `value` is a {@link ContentRef}: exactly `$content` (a key) and `bytes` (a size). */
export function isContentRef(value: unknown): value is ContentRef {
  if (!isRecord(value)) return false;
  const keys = Object.keys(value);
  return (
    keys.length === 2 &&
    isContentKey(value.$content) &&
    Number.isSafeInteger(value.bytes) &&
    (value.bytes as number) >= 0
  );
}

/** True when `value` is what a read gives for content that is gone ({@link MissingContent}). */
export function isMissingContent(value: unknown): value is MissingContent {
  return (
    isRecord(value) &&
    Object.keys(value).length === 3 &&
    isContentKey(value.$content) &&
    typeof value.bytes === 'number' &&
    value.missing === true
  );
}
