import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { checkContentKey } from './content-ref.js';
import { ContentErrorCode, isLoomError, LoomError } from './errors.js';

describe('errors', () => {
  it("the plugin's LoomError is the kernel's class itself", () => {
    expect(LoomError).toBe(KernelLoomError);
  });

  it('CONTENT_REF_INVALID names the key it refused and says what a key is', () => {
    let caught: unknown;
    try {
      checkContentKey('md5:abc');
    } catch (error) {
      caught = error;
    }
    expect(isLoomError(caught, ContentErrorCode.CONTENT_REF_INVALID)).toBe(true);
    expect((caught as LoomError).fields.ref).toBe('md5:abc');
    expect((caught as LoomError).message).toContain("'sha256:' and 64 lowercase hex digits");
  });

  errorCodeConformance({
    codes: ContentErrorCode,
    heading: '## `@loom/plugin-content`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
