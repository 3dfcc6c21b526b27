import { readFileSync } from 'node:fs';
import { LoomError as KernelLoomError } from '@loom/event-runtime';
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

  it('codes are their own names, and unique', () => {
    const codes = Object.entries(ReasoningErrorCode);
    for (const [key, value] of codes) expect(value).toBe(key);
    expect(new Set(Object.values(ReasoningErrorCode)).size).toBe(codes.length);
  });

  it('docs/errors.md lists every code of this package, under its heading', () => {
    const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    const start = docs.indexOf('## `@loom/reasoning`');
    expect(start).toBeGreaterThanOrEqual(0);
    const next = docs.indexOf('\n## ', start + 1);
    const section = docs.slice(start, next === -1 ? undefined : next);
    for (const code of Object.values(ReasoningErrorCode))
      expect(section).toContain(`| \`${code}\` |`);
  });
});
