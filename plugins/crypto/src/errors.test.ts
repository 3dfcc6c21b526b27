import { isLoomError as isKernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { CryptoErrorCode, cryptoError, isLoomError } from './errors.js';

describe('errors', () => {
  it("crypto's errors are the kernel's LoomError, with code and fields", () => {
    const error = cryptoError(CryptoErrorCode.CRYPTO_INTEGRITY, 'x', {
      executionId: 'e',
      sequence: 3,
      path: '$.email',
    });
    expect(error).toMatchObject({ name: 'LoomError', code: 'CRYPTO_INTEGRITY' });
    expect(error.fields).toEqual({ executionId: 'e', sequence: 3, path: '$.email' });
    expect(isKernelLoomError(error, 'CRYPTO_INTEGRITY')).toBe(true);
    expect(isLoomError(error, CryptoErrorCode.KEY_NOT_FOUND)).toBe(false);
  });

  errorCodeConformance({
    codes: CryptoErrorCode,
    heading: '## `@loom/plugin-crypto`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
