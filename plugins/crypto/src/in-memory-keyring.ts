import { randomBytes } from 'node:crypto';
import { checkSubject, forgottenError } from './internal/subject.js';
import type { DataKey, ForgetResult, KeyLookup, KeyRef, Keyring } from './keyring.js';
import { keyRefId } from './keyring.js';

/**
 * A {@link Keyring} in this process's memory: keys live as long as the process. For tests,
 * examples and single-process tools; a durable application uses `SqliteKeyring` or
 * `PostgresKeyring`, whose keys outlive the process.
 *
 * @example
 * const keyring = new InMemoryKeyring();
 * const store = encryptingEventStore(new InMemoryEventStore(), { keyring, sensitive });
 */
export class InMemoryKeyring implements Keyring {
  readonly #keys = new Map<string, DataKey[]>();
  readonly #forgotten = new Set<string>();

  async current(subject: string): Promise<DataKey> {
    checkSubject(subject);
    if (this.#forgotten.has(subject)) throw forgottenError(subject);
    const versions = this.#keys.get(subject);
    if (versions !== undefined) return versions[versions.length - 1] as DataKey;
    const key: DataKey = { subject, version: 1, key: randomBytes(32) };
    this.#keys.set(subject, [key]);
    return key;
  }

  async lookup(refs: readonly KeyRef[]): Promise<KeyLookup> {
    const keys = new Map<string, DataKey>();
    const forgotten = new Set<string>();
    for (const { subject, version } of refs) {
      if (this.#forgotten.has(subject)) forgotten.add(subject);
      const key = this.#keys.get(subject)?.[version - 1];
      if (key !== undefined) keys.set(keyRefId(subject, version), key);
    }
    return { keys, forgotten };
  }

  async rotate(subject: string): Promise<number> {
    const latest = await this.current(subject);
    const key: DataKey = { subject, version: latest.version + 1, key: randomBytes(32) };
    this.#keys.get(subject)?.push(key);
    return key.version;
  }

  async forget(subject: string): Promise<ForgetResult> {
    checkSubject(subject);
    const alreadyForgotten = this.#forgotten.has(subject);
    const versions = this.#keys.get(subject) ?? [];
    // Overwrite the bytes too: a reference someone kept to a DataKey must not keep the key.
    for (const { key } of versions) key.fill(0);
    this.#keys.delete(subject);
    this.#forgotten.add(subject);
    return { subject, keysDestroyed: versions.length, alreadyForgotten };
  }

  async close(): Promise<void> {}
}
