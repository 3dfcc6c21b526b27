import type { JsonValue, Snapshot, SnapshotStore } from '@loom/event-runtime';
import { CryptoErrorCode, cryptoError, isLoomError } from './errors.js';
import {
  type FieldPlace,
  fieldKeyRef,
  isEncryptedField,
  openField,
  sealField,
} from './field-cipher.js';
import type { Keyring } from './keyring.js';
import { keyRefId } from './keyring.js';

/** Options of {@link encryptingSnapshotStore}. */
export interface EncryptingSnapshotStoreOptions {
  keyring: Keyring;
  /**
   * The subject whose data an execution's state holds (e.g. from an id like `signup-<userId>`),
   * or undefined to store its snapshots as they are.
   */
  subjectOf(executionId: string): string | undefined;
}

function placeOf(snapshot: { executionId: string; sequence: number }): FieldPlace {
  return {
    executionId: snapshot.executionId,
    sequence: snapshot.sequence,
    type: 'loom.snapshot',
    path: '$.state',
  };
}

/**
 * A `SnapshotStore` that encrypts each snapshot's whole state under its execution's subject.
 * The runtime's snapshots hold what the flow saw (its input, step results) in plaintext, so a
 * store of events with sensitive fields needs its snapshots wrapped too. A snapshot whose
 * subject was forgotten loads as none: the runtime folds the execution from the log, whose
 * sensitive fields read as `Erased`.
 *
 * A save for a forgotten subject stores nothing.
 *
 * Error codes: `INVALID_ARGUMENT`, `CRYPTO_INTEGRITY`, `KEY_NOT_FOUND`, the keyring's and the
 * inner store's codes.
 *
 * @example
 * const snapshots = encryptingSnapshotStore(new InMemorySnapshotStore(), {
 *   keyring,
 *   subjectOf: (executionId) => executionId.split(':')[1],
 * });
 */
export function encryptingSnapshotStore(
  inner: SnapshotStore,
  options: EncryptingSnapshotStoreOptions,
): SnapshotStore {
  const { keyring, subjectOf } = options ?? {};
  if (typeof keyring?.current !== 'function' || typeof subjectOf !== 'function') {
    throw cryptoError(
      CryptoErrorCode.INVALID_ARGUMENT,
      'encryptingSnapshotStore needs a keyring and a subjectOf(executionId) function',
      { option: typeof subjectOf !== 'function' ? 'subjectOf' : 'keyring' },
    );
  }
  return {
    async save(snapshot: Snapshot) {
      const subject = subjectOf(snapshot?.executionId);
      if (subject === undefined) return inner.save(snapshot);
      let key: Awaited<ReturnType<Keyring['current']>>;
      try {
        key = await keyring.current(subject);
      } catch (error) {
        // A forgotten subject's execution gets no snapshot: a snapshot is an optimisation, and
        // it would hold what the process still had in memory of the erased data.
        if (isLoomError(error, CryptoErrorCode.SUBJECT_FORGOTTEN)) return;
        throw error;
      }
      const { field } = sealField(snapshot.state, key, placeOf(snapshot));
      return inner.save({ ...snapshot, state: field as unknown as JsonValue });
    },
    async load(executionId: string) {
      const snapshot = await inner.load(executionId);
      if (snapshot === undefined || !isEncryptedField(snapshot.state)) return snapshot;
      const place = placeOf(snapshot);
      const ref = fieldKeyRef(snapshot.state);
      const integrity = () =>
        cryptoError(
          CryptoErrorCode.CRYPTO_INTEGRITY,
          `the snapshot of execution ${executionId} at sequence ${snapshot.sequence} does not decrypt: it was changed behind the store's back`,
          { executionId, sequence: snapshot.sequence, path: place.path },
        );
      if (ref === undefined) throw integrity();
      const found = await keyring.lookup([ref]);
      const key = found.keys.get(keyRefId(ref.subject, ref.version));
      if (key === undefined) {
        if (found.forgotten.has(ref.subject)) return undefined;
        throw cryptoError(
          CryptoErrorCode.KEY_NOT_FOUND,
          `the snapshot of execution ${executionId} is encrypted under key '${ref.subject}' v${ref.version}, which this keyring does not have and never forgot`,
          {
            executionId,
            sequence: snapshot.sequence,
            subject: ref.subject,
            keyVersion: ref.version,
          },
        );
      }
      const state = openField(snapshot.state, key, place);
      if (state === undefined) throw integrity();
      return { ...snapshot, state };
    },
    close: () => inner.close(),
  };
}
