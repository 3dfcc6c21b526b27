/** A subject's data key of one version: 32 raw bytes for AES-256-GCM, in memory only. */
export interface DataKey {
  readonly subject: string;
  readonly version: number;
  readonly key: Uint8Array;
}

/** A data key as a ciphertext names it. */
export interface KeyRef {
  readonly subject: string;
  readonly version: number;
}

/** What {@link Keyring.lookup} found for a batch of refs, keyed by {@link keyRefId}. */
export interface KeyLookup {
  /** Keys found. */
  readonly keys: ReadonlyMap<string, DataKey>;
  /** Subjects that were forgotten: their refs read as `Erased`. */
  readonly forgotten: ReadonlySet<string>;
}

/** What {@link Keyring.forget} did. */
export interface ForgetResult {
  subject: string;
  /** Data key versions destroyed by this call (0 when it was already forgotten, or had none). */
  keysDestroyed: number;
  /** True when the subject had been forgotten before this call. */
  alreadyForgotten: boolean;
}

/**
 * Where data keys live: one key per subject (a user, a customer), in versions. Writes use the
 * newest version, reads any version still held. `forget` destroys every version for good.
 * Implementations: `InMemoryKeyring`, `SqliteKeyring` (`@loom/plugin-crypto/sqlite`),
 * `PostgresKeyring` (`@loom/plugin-crypto/postgres`); each passes `keyringConformance`
 * (`@loom/plugin-crypto/testing`).
 */
export interface Keyring {
  /**
   * The subject's newest data key, created (version 1) on first use. Error codes:
   * `SUBJECT_FORGOTTEN`, `MASTER_KEY_INVALID`, store errors.
   */
  current(subject: string): Promise<DataKey>;
  /**
   * The keys of a batch of refs, in one round trip. A ref neither found nor forgotten is simply
   * absent (the caller reports `KEY_NOT_FOUND` with the event that needed it).
   */
  lookup(refs: readonly KeyRef[]): Promise<KeyLookup>;
  /**
   * Make a new version the subject's current key; older versions stay readable. Returns the new
   * version. Error codes: `SUBJECT_FORGOTTEN`.
   */
  rotate(subject: string): Promise<number>;
  /**
   * Crypto-shredding: destroy every data key of the subject and remember that it was forgotten,
   * so no key is ever created for it again. Idempotent.
   */
  forget(subject: string): Promise<ForgetResult>;
  close(): Promise<void>;
}

/** The map key of a {@link KeyRef} in a {@link KeyLookup}. */
export function keyRefId(subject: string, version: number): string {
  return `${version}:${subject}`;
}
