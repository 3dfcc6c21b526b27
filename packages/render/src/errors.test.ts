import { readFileSync } from 'node:fs';
import { isLoomError as isKernelLoomError } from '@loom/event-runtime';
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

  it('codes are their own names, and unique', () => {
    const codes = Object.entries(RenderErrorCode);
    for (const [key, value] of codes) expect(value).toBe(key);
    expect(new Set(Object.values(RenderErrorCode)).size).toBe(codes.length);
  });

  it('docs/errors.md lists every code of this package, under its heading', () => {
    const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    const start = docs.indexOf('## `@loom/render`');
    expect(start).toBeGreaterThanOrEqual(0);
    const next = docs.indexOf('\n## ', start + 1);
    const section = docs.slice(start, next === -1 ? undefined : next);
    for (const code of Object.values(RenderErrorCode)) expect(section).toContain(`| \`${code}\` |`);
  });
});
