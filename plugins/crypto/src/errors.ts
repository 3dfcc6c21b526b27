import { isLoomError, LoomError, type LoomErrorFields } from '@loom/event-runtime';

/**
 * Loom's one error class and its matcher, re-exported from `@loom/event-runtime` (the same
 * class, not a copy): this package's errors are `LoomError`s with the codes below.
 */
export { isLoomError, LoomError };

/**
 * Stable error codes of `@loom/plugin-crypto`. Callers match on `code`, never on `instanceof`.
 * A code is never reused; every package's codes are listed in docs/errors.md.
 */
export const CryptoErrorCode = {
  /**
   * An option is wrong: a `sensitive` map with a bad path (empty, `[]` in the middle of a name,
   * one path inside another), a subject that is neither a path nor a function, a keyring
   * missing, a subject argument that is not a non-empty string. `fields.option` names it.
   */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /**
   * An event has a value to encrypt but no usable subject: the subject is absent, not a
   * non-empty string, or longer than `CryptoLimits.subjectLengthMax`. Nothing is written.
   * `fields.executionId`, `fields.sequence`, `fields.type` say which event.
   */
  CRYPTO_SUBJECT_MISSING: 'CRYPTO_SUBJECT_MISSING',
  /**
   * A stored ciphertext does not decrypt: its tag does not match (it, its key id or version,
   * or the event it sits in was changed) or it is malformed. `fields.executionId`,
   * `fields.sequence` and `fields.path` name the field. Corruption or tampering: the log's
   * hash chain (`verify`) says whether the row was changed behind the store's back.
   */
  CRYPTO_INTEGRITY: 'CRYPTO_INTEGRITY',
  /**
   * A ciphertext names a data key (`fields.subject`, `fields.keyVersion`) that the keyring does
   * not have and that was never forgotten: the store is read with the wrong keyring (another
   * database, schema or master key), or the key table lost rows.
   */
  KEY_NOT_FOUND: 'KEY_NOT_FOUND',
  /**
   * A write of new data for a subject that was forgotten (erased): erasure is final, and no key
   * is made for that subject again. `fields.subject`. Nothing is written. An `Erased` marker
   * carried forward needs no key and is written as is.
   */
  SUBJECT_FORGOTTEN: 'SUBJECT_FORGOTTEN',
  /**
   * The master key is missing or unusable: the environment variable is unset, the key is not 32
   * bytes, a stored data key names a master key id the provider does not have, or the master key
   * cannot unwrap a stored data key (it is not the key that wrapped it). `fields.masterKeyId`.
   */
  MASTER_KEY_INVALID: 'MASTER_KEY_INVALID',
  /**
   * A transactional step (`ctx.transaction`) on a store whose transaction is synchronous
   * (SQLite) wrote a sensitive event for a subject whose data key this `EncryptingEventStore`
   * had not fetched yet: the keyring cannot be awaited inside better-sqlite3's transaction.
   * Nothing was written (the transaction rolled back); the key is fetched meanwhile, so a retry
   * of the step finds it. `fields.subject`. Postgres awaits the keyring inside its transaction
   * and never raises it.
   */
  CRYPTO_KEY_NOT_READY: 'CRYPTO_KEY_NOT_READY',
} as const;

/** One of the stable error codes in {@link CryptoErrorCode}. */
export type CryptoErrorCode = (typeof CryptoErrorCode)[keyof typeof CryptoErrorCode];

/** Structured facts an error of this package carries. */
export interface CryptoErrorFields extends LoomErrorFields {
  option?: string;
  subject?: string;
  keyVersion?: number;
  masterKeyId?: string;
  type?: string;
  [key: string]: unknown;
}

/** A `LoomError` with one of this package's codes. */
export function cryptoError(
  code: CryptoErrorCode,
  message: string,
  fields: CryptoErrorFields = {},
  cause?: unknown,
): LoomError<CryptoErrorCode> {
  return new LoomError(code, message, fields, cause);
}

/** Limits of this package, each with the error it raises. */
export const CryptoLimits = {
  /** Longest subject id, in UTF-16 code units (`CRYPTO_SUBJECT_MISSING` past it). */
  subjectLengthMax: 256,
} as const;
