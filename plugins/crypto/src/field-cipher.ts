import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { JsonValue } from '@loom/event-runtime';
import { decodePayload, encodePayload } from '@loom/event-runtime/store-kit';
import type { DataKey } from './keyring.js';

/**
 * A sensitive field as the log stores it: AES-256-GCM ciphertext of the field's JSON text under
 * the data key `kid` (the subject) of version `kv`. The AAD binds execution, sequence, event
 * type, path, key id and version, so a ciphertext moved to another field or event, or
 * relabelled with another key, does not decrypt.
 */
export interface EncryptedField {
  $enc: 'aes-256-gcm';
  /** Key id: the subject whose data key encrypted it. */
  kid: string;
  /** Key version. */
  kv: number;
  /** 12-byte nonce, base64. */
  iv: string;
  /** Ciphertext, base64. */
  ct: string;
  /** 16-byte authentication tag, base64. */
  tag: string;
}

/**
 * What a read returns in place of a field whose subject was forgotten (crypto-shredded). Plain
 * JSON, so folds, views and replays carry it like any value. Test with {@link isErased}.
 */
export interface Erased {
  $erased: true;
  subject: string;
  keyVersion: number;
}

/** Where a field sits, bound into its ciphertext (AAD). */
export interface FieldPlace {
  executionId: string;
  sequence: number;
  type: string;
  path: string;
}

const ivBytes = 12;
const tagBytes = 16;

/** True for a value in the stored form of an encrypted field (tag-checked only on decrypt). */
export function isEncryptedField(value: unknown): value is EncryptedField {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { $enc?: unknown }).$enc === 'aes-256-gcm'
  );
}

/**
 * True for the marker a read puts where a forgotten subject's field was.
 *
 * @example
 * if (isErased(event.payload.email)) console.log('erased for', event.payload.email.subject);
 */
export function isErased(value: unknown): value is Erased {
  return (
    typeof value === 'object' && value !== null && (value as { $erased?: unknown }).$erased === true
  );
}

/** The marker for a field encrypted under `subject`'s key `keyVersion`, which was destroyed. */
export function erased(subject: string, keyVersion: number): Erased {
  return { $erased: true, subject, keyVersion };
}

function aad(place: FieldPlace, kid: string, kv: number): Buffer {
  return Buffer.from(
    `${place.executionId}\u0000${place.sequence}\u0000${place.type}\u0000${place.path}\u0000${kid}\u0000${kv}`,
    'utf8',
  );
}

/**
 * Encrypts one field's value. Error codes: `PAYLOAD_NOT_JSON`, `LIMIT_EXCEEDED` (the value is
 * not storable JSON; checked as the kernel checks payloads).
 */
export function sealField(
  value: JsonValue,
  key: DataKey,
  place: FieldPlace,
): { field: EncryptedField; text: string } {
  const text = encodePayload(value, place.executionId);
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(aad(place, key.subject, key.version));
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  const field: EncryptedField = {
    $enc: 'aes-256-gcm',
    kid: key.subject,
    kv: key.version,
    iv: iv.toString('base64'),
    ct: body.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
  return { field, text };
}

/** The key a stored field names, or undefined when it is malformed (corrupt). */
export function fieldKeyRef(field: unknown): { subject: string; version: number } | undefined {
  const { kid, kv } = field as { kid?: unknown; kv?: unknown };
  if (typeof kid !== 'string' || typeof kv !== 'number' || !Number.isInteger(kv) || kv < 1)
    return undefined;
  return { subject: kid, version: kv };
}

/** Decrypts one field; undefined when the tag does not match or the stored form is malformed. */
export function openField(field: unknown, key: DataKey, place: FieldPlace): JsonValue | undefined {
  const { iv, ct, tag } = field as { iv?: unknown; ct?: unknown; tag?: unknown };
  if (typeof iv !== 'string' || typeof ct !== 'string' || typeof tag !== 'string') return undefined;
  const ivBuffer = Buffer.from(iv, 'base64');
  const tagBuffer = Buffer.from(tag, 'base64');
  if (ivBuffer.length !== ivBytes || tagBuffer.length !== tagBytes) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, ivBuffer);
    decipher.setAAD(aad(place, key.subject, key.version));
    decipher.setAuthTag(tagBuffer);
    const text = Buffer.concat([decipher.update(Buffer.from(ct, 'base64')), decipher.final()]);
    return decodePayload(text.toString('utf8'));
  } catch {
    return undefined;
  }
}
