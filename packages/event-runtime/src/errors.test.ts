import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ErrorCode, isLoomError, LoomError } from './errors.js';

describe('errors', () => {
  it('isLoomError matches by name and code, so a copy from another package instance matches too', () => {
    const foreign = { name: 'LoomError', code: 'TIMEOUT', message: 'from another copy' };
    expect(isLoomError(foreign)).toBe(true);
    expect(isLoomError(foreign, 'TIMEOUT')).toBe(true);
    expect(isLoomError(foreign, ErrorCode.LOG_CORRUPT)).toBe(false);
    expect(isLoomError(Object.assign(new Error('x'), { code: 'TIMEOUT' }))).toBe(false);
    expect(isLoomError(null)).toBe(false);
  });

  it('a LoomError carries code, fields, name and cause; no cause property without one', () => {
    const cause = new Error('driver');
    const error = new LoomError(
      ErrorCode.LOG_CORRUPT,
      'bad',
      { executionId: 'e', sequence: 3 },
      cause,
    );
    expect(error).toMatchObject({ name: 'LoomError', code: 'LOG_CORRUPT', executionId: 'e' });
    expect(error.cause).toBe(cause);
    expect('cause' in new LoomError(ErrorCode.LOG_CORRUPT, 'bad')).toBe(false);
  });

  it('codes are their own names, and unique', () => {
    const codes = Object.entries(ErrorCode);
    for (const [key, value] of codes) expect(value).toBe(key);
    expect(new Set(Object.values(ErrorCode)).size).toBe(codes.length);
  });

  it('docs/errors.md lists every code of this package, under its heading', () => {
    const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    const start = docs.indexOf('## `@loom/event-runtime`');
    expect(start).toBeGreaterThanOrEqual(0);
    const next = docs.indexOf('\n## ', start + 1);
    const section = docs.slice(start, next === -1 ? undefined : next);
    for (const code of Object.values(ErrorCode)) expect(section).toContain(`| \`${code}\` |`);
  });
});
