import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { AgentErrorCode, LoomError } from './errors.js';

describe('errors', () => {
  it("the agent loop's LoomError is the kernel's class itself", () => {
    expect(LoomError).toBe(KernelLoomError);
  });

  errorCodeConformance({
    codes: AgentErrorCode,
    heading: '## `@loom/agent-loop` (`AgentErrorCode`)',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
