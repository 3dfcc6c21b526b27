import { isLoomError as isKernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { isLoomError, LoomError, RenderErrorCode } from './errors.js';

describe('errors', () => {
  it("render's errors are the kernel's LoomError, with code and fields", () => {
    const error = new LoomError(RenderErrorCode.TOKEN_BUDGET_TOO_SMALL, 'x', {
      requiredTokens: 10,
      budgetTokens: 5,
    });
    expect(error).toMatchObject({ name: 'LoomError', code: 'TOKEN_BUDGET_TOO_SMALL' });
    expect(error.fields).toEqual({ requiredTokens: 10, budgetTokens: 5 });
    expect(isKernelLoomError(error, 'TOKEN_BUDGET_TOO_SMALL')).toBe(true);
    expect(isLoomError(error, RenderErrorCode.INVALID_HISTORY)).toBe(false);
  });

  errorCodeConformance({
    codes: RenderErrorCode,
    heading: '## `@loom/render`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
