import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { isLoomError } from './errors.js';
import { settle } from './internal/test-helpers.js';
import { schedule } from './schedule.js';

describe('schedule (module-level, no cap)', () => {
  it('starts the task before it returns and settles as the task does', async () => {
    let started = 0;
    const result = schedule(async () => {
      started++;
      return 42;
    });
    expect(started).toBe(1);
    await expect(result).resolves.toBe(42);
    await expect(schedule(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });

  it('passes the caller signal through to the task', async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    await schedule(
      async (signal) => {
        seen = signal;
      },
      { signal: controller.signal },
    );
    expect(seen).toBe(controller.signal);
  });

  it('a running task sees its signal abort and decides the outcome', async () => {
    const controller = new AbortController();
    const result = schedule(
      (signal) =>
        new Promise<string>((resolve) => {
          signal.addEventListener('abort', () => resolve('stopped early'));
        }),
      { signal: controller.signal },
    );
    controller.abort();
    await expect(result).resolves.toBe('stopped early');
  });

  it('without a signal a task gets one that never aborts and keeps no listeners', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const signals = new Set<AbortSignal>();
    let called = 0;
    await Promise.all(
      Array.from({ length: 50 }, () =>
        schedule(async (signal) => {
          signals.add(signal);
          signal.addEventListener('abort', () => called++);
          signal.onabort = () => called++;
        }),
      ),
    );
    await settle();
    process.off('warning', onWarning);
    expect(signals.size).toBe(1);
    const [signal] = signals;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal?.aborted).toBe(false);
    expect(signal?.onabort).toBe(null);
    expect(called).toBe(0);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it("the never-aborting signal works with Node's own signal consumers", async () => {
    const value = await schedule(async (signal) => {
      const combined = AbortSignal.any([signal]);
      const waited = await sleep(1, 'slept', { signal });
      return `${waited} ${combined.aborted}`;
    });
    expect(value).toBe('slept false');
  });

  it('an already-aborted signal rejects with SCHEDULE_ABORTED and the task never runs', async () => {
    const controller = new AbortController();
    const reason = new Error('user went away');
    controller.abort(reason);
    let ran = 0;
    const error = await schedule(
      async () => {
        ran++;
      },
      { signal: controller.signal },
    ).catch((e: unknown) => e);
    expect(ran).toBe(0);
    expect(isLoomError(error, 'SCHEDULE_ABORTED')).toBe(true);
    expect((error as Error).cause).toBe(reason);
  });

  it('a synchronous throw becomes a rejection, not a throw', async () => {
    const result = schedule(() => {
      throw new Error('sync');
    });
    await expect(result).rejects.toThrow('sync');
  });

  it('a task returning a plain value still yields a promise', async () => {
    const result = schedule((() => 7) as unknown as () => Promise<number>);
    expect(result).toBeInstanceOf(Promise);
    await expect(result).resolves.toBe(7);
  });

  it.each([
    ['a promise instead of a function', Promise.resolve(1)],
    ['undefined', undefined],
    ['a string', 'task'],
  ])('rejects %s with INVALID_ARGUMENT', async (_label, task) => {
    const error = await schedule(task as never).catch((e: unknown) => e);
    expect(isLoomError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect((error as { fields: { argument: string } }).fields.argument).toBe('task');
  });

  it.each([
    ['priority', { priority: 'urgent' }],
    ['key', { key: 42 }],
    ['key', { key: 'k'.repeat(201) }],
    ['signal', { signal: { aborted: 'no' } }],
    ['options', null],
  ])('rejects a bad %s with INVALID_ARGUMENT', async (argument, options) => {
    let ran = 0;
    const error = await schedule(async () => {
      ran++;
    }, options as never).catch((e: unknown) => e);
    expect(ran).toBe(0);
    expect(isLoomError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect((error as { fields: { argument: string } }).fields.argument).toBe(argument);
  });
});
