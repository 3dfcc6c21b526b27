import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { LoomError, WorkflowErrorCode } from './errors.js';

describe('errors', () => {
  it("the workflow layer's LoomError is the kernel's class itself", () => {
    expect(LoomError).toBe(KernelLoomError);
  });

  errorCodeConformance({
    codes: WorkflowErrorCode,
    heading: '## `@loom/workflow-runtime`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
