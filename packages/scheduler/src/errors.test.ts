import { errorCodeConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { isLoomError, LoomError, SchedulerErrorCode } from './errors.js';

describe('LoomError', () => {
  it('carries a stable code, fields, name and cause', () => {
    const cause = new Error('driver');
    const error = new LoomError(
      SchedulerErrorCode.SCHEDULER_QUEUE_FULL,
      'full',
      { limit: 'queueDepthMax' },
      cause,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('LoomError');
    expect(error.code).toBe('SCHEDULER_QUEUE_FULL');
    expect(error.fields).toEqual({ limit: 'queueDepthMax' });
    expect(error.cause).toBe(cause);
  });

  it('has no cause property when none is given', () => {
    expect('cause' in new LoomError(SchedulerErrorCode.INVALID_ARGUMENT, 'bad')).toBe(false);
  });

  it('is recognised by shape, so a second copy of the package matches too', () => {
    const foreign = Object.assign(new Error('x'), { name: 'LoomError', code: 'SCHEDULE_ABORTED' });
    expect(isLoomError(foreign)).toBe(true);
    expect(isLoomError(foreign, SchedulerErrorCode.SCHEDULE_ABORTED)).toBe(true);
    expect(isLoomError(foreign, SchedulerErrorCode.INVALID_ARGUMENT)).toBe(false);
    expect(isLoomError(new Error('plain'))).toBe(false);
    expect(isLoomError(null)).toBe(false);
    expect(isLoomError('SCHEDULE_ABORTED')).toBe(false);
  });

  errorCodeConformance({
    codes: SchedulerErrorCode,
    heading: '## `@loom/scheduler`',
    docs: new URL('../../../docs/errors.md', import.meta.url),
  });
});
