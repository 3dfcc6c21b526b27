import { LoomError as KernelLoomError } from '@loom/event-runtime';
import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import {
  isLoomError,
  isTerminalError,
  LoomError,
  MiddlewareErrorCode,
  TerminalError,
  terminalError,
} from './errors.js';

describe('errors', () => {
  it("middleware's LoomError is the kernel's class itself, not a subclass", () => {
    expect(LoomError).toBe(KernelLoomError);
    const cause = new Error('socket hang up');
    const error = new LoomError(MiddlewareErrorCode.TIMEOUT, 'too slow', { timeoutMs: 5 }, cause);
    expect(Object.getPrototypeOf(error)).toBe(KernelLoomError.prototype);
    expect(error).toMatchObject({ name: 'LoomError', code: 'TIMEOUT', fields: { timeoutMs: 5 } });
    expect(error.cause).toBe(cause);
  });

  it('matches on name and code, so a copy from another package instance matches too', () => {
    const foreign = { name: 'LoomError', code: 'RATE_LIMITED', message: 'x' };
    expect(isLoomError(foreign)).toBe(true);
    expect(isLoomError(foreign, MiddlewareErrorCode.RATE_LIMITED)).toBe(true);
    expect(isLoomError(foreign, MiddlewareErrorCode.TIMEOUT)).toBe(false);
    expect(isLoomError(new Error('x'))).toBe(false);
    expect(isLoomError('LoomError')).toBe(false);
    expect(isLoomError(null)).toBe(false);
  });

  it('terminalError makes a plain LoomError with code TERMINAL', () => {
    const error = terminalError('card declined', { status: 402 });
    expect(Object.getPrototypeOf(error)).toBe(KernelLoomError.prototype);
    expect(isLoomError(error, MiddlewareErrorCode.TERMINAL)).toBe(true);
    expect(isTerminalError(error)).toBe(true);
    expect(error.fields).toEqual({ status: 402 });
    expect(isTerminalError(new LoomError(MiddlewareErrorCode.TIMEOUT, 'x'))).toBe(false);
  });

  it('the deprecated `new TerminalError()` returns what terminalError() returns', () => {
    const error = new TerminalError('card declined', { status: 402 });
    expect(Object.getPrototypeOf(error)).toBe(KernelLoomError.prototype);
    expect(error).toMatchObject({ code: 'TERMINAL', message: 'card declined' });
    expect(isTerminalError(error)).toBe(true);
  });

  errorCodeConformance({
    codes: MiddlewareErrorCode,
    heading: '## `@loom/middleware`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
