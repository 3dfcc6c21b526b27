import { randomBytes } from 'node:crypto';
import { CryptoErrorCode, cryptoError } from '../errors.js';
import type { KeyProvider } from '../key-provider.js';
import type { DataKey, ForgetResult, KeyLookup, KeyRef, Keyring } from '../keyring.js';
import { keyRefId } from '../keyring.js';
import { checkSubject, forgottenError } from './subject.js';

/** A wrapped data key as a key table stores it. */
export interface KeyRow {
  subject: string;
  version: number;
  wrapped: Uint8Array;
  masterKeyId: string;
}

/**
 * The SQL a durable keyring needs, one method per statement (or transaction): what
 * `SqliteKeyring` and `PostgresKeyring` implement, and all they implement.
 */
export interface KeyTable {
  /** The subject's newest key row (if any) and whether it was forgotten. */
  latest(subject: string): Promise<{ row: KeyRow | undefined; forgotten: boolean }>;
  /**
   * Insert a key row unless the subject is forgotten (checked under the subject's row lock, so a
   * concurrent forget cannot miss it) or the version exists.
   */
  insert(row: KeyRow, atMs: number): Promise<'inserted' | 'exists' | 'forgotten'>;
  /** The rows of the refs that exist, and which of their subjects were forgotten: one round trip. */
  select(refs: readonly KeyRef[]): Promise<{ rows: KeyRow[]; forgotten: string[] }>;
  /** Mark the subject forgotten and delete its key rows, in one transaction. */
  forget(subject: string, atMs: number): Promise<{ destroyed: number; alreadyForgotten: boolean }>;
  close(): Promise<void>;
}

/** Options shared by the durable keyrings. */
export interface TableKeyringOptions {
  /**
   * Wraps data keys before they are stored (a master key from the environment, or a KMS).
   * Without it the keyring can only `forget` (an erasure tool needs no master key); every other
   * call is `MASTER_KEY_INVALID`.
   */
  provider?: KeyProvider;
  /**
   * How long this process keeps an unwrapped data key in memory, so a hot subject costs no
   * round trip or unwrap per event. A `forget` here evicts at once; a `forget` in another process
   * reaches this one's cache only when the entry expires. 0 keeps nothing. Default 60 000.
   */
  cacheTtlMs?: number;
  /** Epoch milliseconds; default `Date.now`. */
  now?: () => number;
}

interface Cached {
  key: DataKey;
  expiresAtMs: number;
}

const rotateAttemptsMax = 8;

/** Envelope encryption over a {@link KeyTable}, with a bounded-time cache of unwrapped keys. */
export class TableKeyring implements Keyring {
  readonly #table: KeyTable;
  readonly #provider: KeyProvider | undefined;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Newest key per subject (for writes). */
  readonly #current = new Map<string, Cached>();
  /** Any version, by {@link keyRefId} (for reads). */
  readonly #byRef = new Map<string, Cached>();

  constructor(table: KeyTable, options: TableKeyringOptions) {
    this.#table = table;
    this.#provider = options.provider;
    this.#ttlMs = options.cacheTtlMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  async current(subject: string): Promise<DataKey> {
    checkSubject(subject);
    const cached = this.#fresh(this.#current.get(subject));
    if (cached !== undefined) return cached;
    for (;;) {
      const { row, forgotten } = await this.#table.latest(subject);
      if (forgotten) throw forgottenError(subject);
      if (row !== undefined) return this.#remember(await this.#unwrap(row), true);
      const outcome = await this.#table.insert(await this.#newRow(subject, 1), this.#now());
      if (outcome === 'forgotten') throw forgottenError(subject);
      // Inserted, or another process created version 1 first: read back whichever won.
    }
  }

  async lookup(refs: readonly KeyRef[]): Promise<KeyLookup> {
    const keys = new Map<string, DataKey>();
    const missing: KeyRef[] = [];
    for (const ref of refs) {
      const id = keyRefId(ref.subject, ref.version);
      const cached = this.#fresh(this.#byRef.get(id));
      if (cached !== undefined) keys.set(id, cached);
      else missing.push(ref);
    }
    if (missing.length === 0) return { keys, forgotten: new Set() };
    const { rows, forgotten } = await this.#table.select(missing);
    for (const row of rows) {
      const key = this.#remember(await this.#unwrap(row), false);
      keys.set(keyRefId(key.subject, key.version), key);
    }
    return { keys, forgotten: new Set(forgotten) };
  }

  async rotate(subject: string): Promise<number> {
    checkSubject(subject);
    for (let attempt = 0; attempt < rotateAttemptsMax; attempt++) {
      const { row, forgotten } = await this.#table.latest(subject);
      if (forgotten) throw forgottenError(subject);
      const version = (row?.version ?? 0) + 1;
      const outcome = await this.#table.insert(await this.#newRow(subject, version), this.#now());
      if (outcome === 'forgotten') throw forgottenError(subject);
      if (outcome === 'inserted') {
        this.#current.delete(subject);
        return version;
      }
    }
    throw new Error(
      `rotate('${subject}') lost the race for a new version ${rotateAttemptsMax} times in a row: something rotates this subject in a loop`,
    );
  }

  async forget(subject: string): Promise<ForgetResult> {
    checkSubject(subject);
    this.#evict(subject);
    const { destroyed, alreadyForgotten } = await this.#table.forget(subject, this.#now());
    this.#evict(subject);
    return { subject, keysDestroyed: destroyed, alreadyForgotten };
  }

  close(): Promise<void> {
    this.#current.clear();
    this.#byRef.clear();
    return this.#table.close();
  }

  #evict(subject: string): void {
    this.#current.delete(subject);
    for (const [id, cached] of this.#byRef)
      if (cached.key.subject === subject) this.#byRef.delete(id);
  }

  #fresh(cached: Cached | undefined): DataKey | undefined {
    if (cached === undefined || cached.expiresAtMs <= this.#now()) return undefined;
    return cached.key;
  }

  #remember(key: DataKey, isCurrent: boolean): DataKey {
    if (this.#ttlMs <= 0) return key;
    const entry = { key, expiresAtMs: this.#now() + this.#ttlMs };
    if (isCurrent) this.#current.set(key.subject, entry);
    this.#byRef.set(keyRefId(key.subject, key.version), entry);
    return key;
  }

  #needProvider(): KeyProvider {
    if (this.#provider !== undefined) return this.#provider;
    throw cryptoError(
      CryptoErrorCode.MASTER_KEY_INVALID,
      'this keyring was opened without a key provider: it can only forget subjects; pass `provider` to read or write keys',
      {},
    );
  }

  async #newRow(subject: string, version: number): Promise<KeyRow> {
    const provider = this.#needProvider();
    const key = randomBytes(32);
    const wrapped = await provider.wrap(key, wrapContext(subject, version));
    key.fill(0);
    return { subject, version, wrapped, masterKeyId: provider.currentKeyId };
  }

  async #unwrap(row: KeyRow): Promise<DataKey> {
    const key = await this.#needProvider().unwrap(
      row.wrapped,
      row.masterKeyId,
      wrapContext(row.subject, row.version),
    );
    return { subject: row.subject, version: row.version, key };
  }
}

function wrapContext(subject: string, version: number): string {
  return `loom-data-key\u0000${subject}\u0000${version}`;
}
