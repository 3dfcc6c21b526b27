import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { isLoomError, isRetryableModelError, LoomError, ReasoningErrorCode } from './errors.js';

describe('errors', () => {
  it("reasoning's LoomError is the kernel's class itself, and isLoomError narrows by code", () => {
    expect(LoomError).toBe(KernelLoomError);
    const error: unknown = new LoomError(ReasoningErrorCode.MODEL_TIMEOUT, 'slow', {
      timeoutMs: 5,
    });
    expect(isLoomError(error, ReasoningErrorCode.MODEL_TIMEOUT)).toBe(true);
    expect(isRetryableModelError(error)).toBe(true);
    expect(isRetryableModelError(new LoomError(ReasoningErrorCode.MODEL_BAD_REQUEST, 'no'))).toBe(
      false,
    );
  });

  errorCodeConformance({
    codes: ReasoningErrorCode,
    heading: '## `@loom/reasoning`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
