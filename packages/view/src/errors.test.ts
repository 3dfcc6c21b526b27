import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { LoomError, ViewErrorCode } from './errors.js';

describe('errors', () => {
  it("the view's LoomError is the kernel's class itself", () => {
    expect(LoomError).toBe(KernelLoomError);
  });

  errorCodeConformance({
    codes: ViewErrorCode,
    heading: '## `@loom/view` (`ViewErrorCode`)',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
