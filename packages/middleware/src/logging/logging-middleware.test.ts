import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { composeMiddleware, wrapEffect } from '../compose-middleware.js';
import { LoomError, MiddlewareErrorCode } from '../errors.js';
import { expectInvalidOption } from '../internal/expect-invalid-option.test-support.js';
import { retryMiddleware } from '../retry/retry-middleware.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { type EffectLogRecord, loggingMiddleware } from './logging-middleware.js';

describe('loggingMiddleware', () => {
  it('inside retry, logs one structured record per attempt', async () => {
    const time = new ManualClock(0);
    const records: EffectLogRecord[] = [];
    const failures: unknown[] = [
      new LoomError(MiddlewareErrorCode.TIMEOUT, 'too slow'),
      'a bare string',
    ];
    const chain = composeMiddleware(
      retryMiddleware({
        attempts: 3,
        backoff: { jitter: 'none' },
        clock: time,
      }),
      loggingMiddleware({ log: (record) => records.push(record), clock: time }),
    );
    const pending = wrapEffect(chain, async (ctx) => {
      await new Promise<void>((resolve) => time.setTimer(resolve, 20));
      if (ctx.attempt <= failures.length) throw failures[ctx.attempt - 1];
      return 'done';
    })(testEffectContext({ executionId: 'e-7', stepIndex: 2, stepName: 'fetch' }));
    await time.runAll();
    await expect(pending).resolves.toBe('done');

    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({
      level: 'error',
      message: "step 'fetch' attempt 1 failed",
      executionId: 'e-7',
      stepIndex: 2,
      stepName: 'fetch',
      idempotencyKey: 'e-7/2',
      attempt: 1,
      durationMs: 20,
      outcome: 'error',
      errorCode: 'TIMEOUT',
      errorMessage: 'LoomError: too slow',
    });
    expect(records[0]?.error).toBe(failures[0]);
    expect(records[1]).toMatchObject({ attempt: 2, errorMessage: 'a bare string' });
    expect(records[1]).not.toHaveProperty('errorCode');
    expect(records[2]).toEqual({
      level: 'info',
      message: "step 'fetch' attempt 3 succeeded",
      executionId: 'e-7',
      stepIndex: 2,
      stepName: 'fetch',
      idempotencyKey: 'e-7/2',
      attempt: 3,
      durationMs: 20,
      outcome: 'ok',
    });
  });

  it('describes thrown values that cannot even be turned into a string', async () => {
    const records: EffectLogRecord[] = [];
    const odd = Object.create(null) as object;
    const logging = loggingMiddleware({ log: (r) => records.push(r) });
    await expect(
      wrapEffect(logging, () => {
        throw odd;
      })(testEffectContext()),
    ).rejects.toBe(odd);
    expect(records[0]?.errorMessage).toBe('[object Object]');
  });

  it('a throwing or rejecting log changes nothing for the caller', async () => {
    const hookErrors: unknown[] = [];
    const logging = loggingMiddleware({
      log: (record) => {
        if (record.outcome === 'ok') throw new Error('sync bug');
        return Promise.reject(new Error('async bug')) as unknown as undefined;
      },
      onHookError: (error) => hookErrors.push(error),
    });
    await expect(wrapEffect(logging, () => 1)(testEffectContext())).resolves.toBe(1);
    const boom = new Error('boom');
    await expect(
      wrapEffect(logging, () => {
        throw boom;
      })(testEffectContext()),
    ).rejects.toBe(boom);
    await new ManualClock().advance(0);
    expect(hookErrors.map((e) => (e as Error).message)).toEqual(['sync bug', 'async bug']);
  });

  it('names the bad option', () => {
    expectInvalidOption(() => loggingMiddleware({} as never), 'log');
    expectInvalidOption(() => loggingMiddleware({ log: console } as never), 'log');
    expectInvalidOption(
      () => loggingMiddleware({ log: () => {}, level: 'debug' } as never),
      'level',
    );
    expectInvalidOption(
      () => loggingMiddleware({ log: () => {}, onHookError: 'ignore' } as never),
      'onHookError',
    );
  });
});
