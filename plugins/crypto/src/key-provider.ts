import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { CryptoErrorCode, cryptoError } from './errors.js';

/**
 * The key-encryption side of envelope encryption: data keys are stored only wrapped by a master
 * key the application holds (an environment variable, a vault, a cloud KMS). A KMS implements
 * it by calling its encrypt/decrypt API; the keyring never sees the master key.
 *
 * `context` is bound into the wrapping (as AAD for AES-GCM, as encryption context for a KMS),
 * so a wrapped key copied to another subject's row does not unwrap.
 */
export interface KeyProvider {
  /** The id of the master key new data keys are wrapped with (stored beside each wrapped key). */
  readonly currentKeyId: string;
  /** Wrap a 32-byte data key with the current master key. */
  wrap(dataKey: Uint8Array, context: string): Promise<Uint8Array>;
  /**
   * Unwrap a data key wrapped with master key `masterKeyId`. Error codes: `MASTER_KEY_INVALID`
   * (an unknown master key id, or the key does not unwrap it).
   */
  unwrap(wrapped: Uint8Array, masterKeyId: string, context: string): Promise<Uint8Array>;
}

const masterKeyBytes = 32;
const ivBytes = 12;
const tagBytes = 16;

function checkMasterKey(id: string, key: Uint8Array): Buffer {
  if (!(key instanceof Uint8Array) || key.byteLength !== masterKeyBytes) {
    throw cryptoError(
      CryptoErrorCode.MASTER_KEY_INVALID,
      `master key '${id}' must be ${masterKeyBytes} bytes (AES-256), got ${key instanceof Uint8Array ? key.byteLength : typeof key}: generate one with \`openssl rand -base64 32\``,
      { masterKeyId: id },
    );
  }
  return Buffer.from(key);
}

/**
 * A {@link KeyProvider} over master keys held in this process (AES-256-GCM key wrap). Rotate the
 * master key by adding a new id and making it `current`: data keys wrapped with an older one
 * still unwrap while it stays in `keys`.
 *
 * Error codes: `MASTER_KEY_INVALID` (a key not 32 bytes, `current` not in `keys`).
 *
 * @example
 * const provider = localKeyProvider({ current: '2026-12', keys: { '2026-12': masterKeyBytes } });
 */
export function localKeyProvider(options: {
  current: string;
  keys: Readonly<Record<string, Uint8Array>>;
}): KeyProvider {
  const keys = new Map<string, Buffer>();
  for (const [id, key] of Object.entries(options.keys)) keys.set(id, checkMasterKey(id, key));
  if (!keys.has(options.current)) {
    throw cryptoError(
      CryptoErrorCode.MASTER_KEY_INVALID,
      `the current master key '${options.current}' is not among the keys given (${[...keys.keys()].join(', ')})`,
      { masterKeyId: options.current },
    );
  }
  const keyOf = (id: string): Buffer => {
    const key = keys.get(id);
    if (key === undefined) {
      throw cryptoError(
        CryptoErrorCode.MASTER_KEY_INVALID,
        `a data key was wrapped with master key '${id}', which this provider does not have: keep old master keys in \`keys\` until every data key is rewrapped`,
        { masterKeyId: id },
      );
    }
    return key;
  };
  return {
    currentKeyId: options.current,
    async wrap(dataKey, context) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', keyOf(options.current), iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(dataKey), cipher.final()]);
      return Buffer.concat([iv, body, cipher.getAuthTag()]);
    },
    async unwrap(wrapped, masterKeyId, context) {
      const key = keyOf(masterKeyId);
      const bytes = Buffer.from(wrapped);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, ivBytes));
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes));
        return Buffer.concat([
          decipher.update(bytes.subarray(ivBytes, bytes.length - tagBytes)),
          decipher.final(),
        ]);
      } catch (error) {
        throw cryptoError(
          CryptoErrorCode.MASTER_KEY_INVALID,
          `master key '${masterKeyId}' does not unwrap the data key of '${context}': it is not the key that wrapped it, or the wrapped key was changed`,
          { masterKeyId },
          error,
        );
      }
    },
  };
}

/**
 * A {@link KeyProvider} whose one master key comes from an environment variable (base64 of 32
 * bytes), with the id `env:<name>`.
 *
 * Error codes: `MASTER_KEY_INVALID` (unset, or not 32 bytes).
 *
 * @example
 * const provider = masterKeyFromEnv(); // LOOM_MASTER_KEY=$(openssl rand -base64 32)
 */
export function masterKeyFromEnv(
  name = 'LOOM_MASTER_KEY',
  env: Readonly<Record<string, string | undefined>> = process.env,
): KeyProvider {
  const text = env[name];
  const id = `env:${name}`;
  if (text === undefined || text === '') {
    throw cryptoError(
      CryptoErrorCode.MASTER_KEY_INVALID,
      `environment variable ${name} is not set: set it to a base64 master key (\`openssl rand -base64 32\`)`,
      { masterKeyId: id },
    );
  }
  return localKeyProvider({ current: id, keys: { [id]: Buffer.from(text, 'base64') } });
}
