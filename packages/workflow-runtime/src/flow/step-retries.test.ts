import type { ExecutionFailedFields, LoomError } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { terminalError } from '../index.js';
import { type TestBackend, testBackends } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime, type Runtime, type RuntimeSettingsOptions } from './flow-runtime.js';

/** Settles `promise` while the clock fires its timers (in-memory backoffs), real I/O between. */
async function drive<T>(clock: ManualClock, promise: Promise<T>): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  watched.catch(() => undefined);
  for (let round = 0; round < 2_000 && !settled; round++) {
    await clock.runUntil(() => settled);
    if (!settled) await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (!settled) throw new Error('the promise never settled while the clock ran its timers');
  return watched;
}

async function rejection(promise: Promise<unknown>): Promise<LoomError> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error as LoomError,
  );
}

for (const [backend, open] of testBackends('retries')) {
  describe(`step retries and failures on ${backend}`, () => {
    const opened: Array<{ runtime: Runtime; backend: TestBackend }> = [];
    const make = async (options: Partial<RuntimeSettingsOptions> = {}) => {
      const clock = new ManualClock();
      const made = await open(clock);
      const runtime = createRuntime({
        store: made.store,
        clock,
        timerPollMs: 0,
        inlineWaitMs: 60_000,
        ...options,
      });
      opened.push({ runtime, backend: made });
      return { clock, runtime, store: made.store };
    };
    afterEach(async () => {
      for (const { runtime, backend: made } of opened.splice(0)) {
        await runtime.shutdown();
        await made.drop();
        await runtime.store.close();
      }
    });

    it("the runtime's stepRetry retries steps durably; a step's own retry or false overrides it; a terminalError() is never retried", async () => {
      const { clock, runtime, store } = await make({
        stepRetry: { attempts: 4, backoff: { initialMs: 1_000, factor: 1, jitter: 'none' } },
      });
      const runs = { inherited: 0, own: 0, off: 0, terminal: 0 };
      const failing = (key: keyof typeof runs, error: () => Error) => () => {
        runs[key] += 1;
        throw error();
      };
      const flow = defineFlow({ name: 'defaults' }, async (ctx) => {
        const attemptsOf = (work: Promise<unknown>) =>
          work.then(
            () => -1,
            (error: LoomError) => error.fields.attempts as number,
          );
        return [
          await attemptsOf(
            ctx.step(
              'inherited',
              failing('inherited', () => new Error('flaky')),
            ),
          ),
          await attemptsOf(
            ctx.step(
              'own',
              failing('own', () => new Error('flaky')),
              { retry: { attempts: 2, backoff: { initialMs: 5, jitter: 'none' } } },
            ),
          ),
          await attemptsOf(
            ctx.step(
              'off',
              failing('off', () => new Error('flaky')),
              { retry: false },
            ),
          ),
          await attemptsOf(
            ctx.step(
              'terminal',
              failing('terminal', () => terminalError('card stolen')),
            ),
          ),
        ];
      });
      const handle = await runtime.start(flow, null);
      expect(await drive(clock, handle.result())).toEqual([4, 2, 1, 1]);
      expect(runs).toEqual({ inherited: 4, own: 2, off: 1, terminal: 1 });
      const types = (await store.read(handle.executionId)).map((event) => event.type);
      expect(types.filter((type) => type === 'step.attempt_failed')).toHaveLength(3 + 1);
    });

    it('a failed execution rejects with EXECUTION_FAILED naming the step; runtime.retry reruns it, replaying completed steps', async () => {
      const { clock, runtime, store } = await make();
      const ran = { reserve: 0, charge: 0 };
      let gatewayUp = false;
      const flow = defineFlow({ name: 'order' }, async (ctx, sku: string) => {
        const reserved = await ctx.step('reserve', () => {
          ran.reserve += 1;
          return `reserved ${sku}`;
        });
        const charged = await ctx.step(
          'charge',
          (effect) => {
            ran.charge += 1;
            if (!gatewayUp) {
              throw Object.assign(new Error('gateway down'), { code: 'GATEWAY_DOWN' });
            }
            return `charged on attempt ${effect.attempt}`;
          },
          { retry: { attempts: 3, backoff: { initialMs: 100, jitter: 'none' } } },
        );
        return `${reserved}, ${charged}`;
      });
      const handle = await runtime.start(flow, 'loom-1', { executionId: 'order-7' });
      const error = await rejection(drive(clock, handle.result()));
      expect(error.code).toBe('EXECUTION_FAILED');
      const fields = error.fields as unknown as ExecutionFailedFields;
      expect(fields).toMatchObject({
        executionId: 'order-7',
        step: 'charge',
        stepIndex: 1,
        attempts: 3,
        error: { name: 'Error', message: 'gateway down', code: 'GATEWAY_DOWN' },
      });
      expect(fields.error.stack).toMatch(/gateway down/);
      expect(ran).toEqual({ reserve: 1, charge: 3 });

      gatewayUp = true;
      const retried = await runtime.retry<string>('order-7');
      expect(await drive(clock, retried.result())).toBe('reserved loom-1, charged on attempt 1');
      expect(ran).toEqual({ reserve: 1, charge: 4 });
      const types = (await store.read('order-7')).map((event) => event.type);
      expect(types.slice(types.indexOf('execution.failed'))).toEqual([
        'execution.failed',
        'execution.retried',
        'step.attempt_started', // durable before the reopened attempt's effect (ADR 0031)
        'step.completed',
        'execution.completed',
      ]);
      expect((await rejection(runtime.retry('order-7'))).code).toBe('EXECUTION_NOT_FAILED');
    });
  });
}
