export {
  EncryptingEventStore,
  type EncryptingEventStoreOptions,
  type ErasureReceipt,
  encryptingEventStore,
  erasureReceiptId,
  erasureReceiptType,
  signalRuleType,
} from './encrypting-event-store.js';
export {
  type EncryptingSnapshotStoreOptions,
  encryptingSnapshotStore,
} from './encrypting-snapshot-store.js';
export {
  CryptoErrorCode,
  type CryptoErrorFields,
  CryptoLimits,
  isLoomError,
  LoomError,
} from './errors.js';
export { type EncryptedField, type Erased, isEncryptedField, isErased } from './field-cipher.js';
export { InMemoryKeyring } from './in-memory-keyring.js';
export { type KeyProvider, localKeyProvider, masterKeyFromEnv } from './key-provider.js';
export {
  type DataKey,
  type ForgetResult,
  type KeyLookup,
  type KeyRef,
  type Keyring,
  keyRefId,
} from './keyring.js';
export type { SensitiveFields, SensitiveRule, SubjectOf } from './sensitive-fields.js';
