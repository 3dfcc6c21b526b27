import { describe, expect, it } from 'vitest';
import { ErrorCode, isLoomError, isTerminalError, LoomError, TerminalError } from './errors.js';

describe('errors', () => {
  it('a LoomError carries code, fields, name and cause', () => {
    const cause = new Error('socket hang up');
    const error = new LoomError(ErrorCode.TIMEOUT, 'too slow', { timeoutMs: 5 }, cause);
    expect(error).toMatchObject({ name: 'LoomError', code: 'TIMEOUT', fields: { timeoutMs: 5 } });
    expect(error.cause).toBe(cause);
    expect(new LoomError(ErrorCode.TIMEOUT, 'no cause')).not.toHaveProperty('cause');
  });

  it('matches on name and code, so a copy from another package instance matches too', () => {
    const foreign = { name: 'LoomError', code: 'RATE_LIMITED', message: 'x' };
    expect(isLoomError(foreign)).toBe(true);
    expect(isLoomError(foreign, ErrorCode.RATE_LIMITED)).toBe(true);
    expect(isLoomError(foreign, ErrorCode.TIMEOUT)).toBe(false);
    expect(isLoomError(new Error('x'))).toBe(false);
    expect(isLoomError('LoomError')).toBe(false);
    expect(isLoomError(null)).toBe(false);
  });

  it('a TerminalError is a LoomError with code TERMINAL', () => {
    const error = new TerminalError('card declined', { status: 402 });
    expect(isLoomError(error, ErrorCode.TERMINAL)).toBe(true);
    expect(isTerminalError(error)).toBe(true);
    expect(error.fields).toEqual({ status: 402 });
    expect(isTerminalError(new LoomError(ErrorCode.TIMEOUT, 'x'))).toBe(false);
  });

  it('codes are their own names, and unique', () => {
    const codes = Object.entries(ErrorCode);
    for (const [key, value] of codes) expect(value).toBe(key);
    expect(new Set(Object.values(ErrorCode)).size).toBe(codes.length);
  });
});
