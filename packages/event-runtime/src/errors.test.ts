import { describe, expect, it } from 'vitest';
import { ErrorCode, isLoomError, LoomError } from './errors.js';
import { errorCodeConformance } from './testing/error-code-conformance.js';

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

  errorCodeConformance({
    codes: ErrorCode,
    heading: '## `@loom/event-runtime`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
