import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventStore, InMemoryEventStore, type LoomError } from '@loom/event-runtime';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { ManualClock } from '@loom/event-runtime/testing';
import { type EffectMiddleware, terminalError } from '@loom/middleware';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { occurrences } from '../cron/occurrences.js';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime, type Runtime } from './flow-runtime.js';
import { testSchema } from './test-schema.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-flows-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let fileCounter = 0;

const backends: Array<[string, (clock: ManualClock) => EventStore]> = [
  ['memory', (clock) => new InMemoryEventStore({ clock })],
  [
    'sqlite',
    (clock) =>
      SqliteEventStore.open({
        path: join(directory, `flows-${++fileCounter}.db`),
        migrate: true,
        clock,
      }),
  ],
];

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

for (const [backend, open] of backends) {
  describe(`flows on ${backend}`, () => {
    const runtimes: Runtime[] = [];
    const make = (inlineWaitMs = 0) => {
      const clock = new ManualClock();
      const store = open(clock);
      const runtime = createRuntime({ store, clock, timerPollMs: 0, inlineWaitMs });
      runtimes.push(runtime);
      return { clock, store, runtime };
    };
    afterEach(async () => {
      for (const runtime of runtimes.splice(0)) {
        await runtime.shutdown();
        await runtime.store.close();
      }
    });

    it('validates input before anything is written, and passes the transformed value', async () => {
      const { runtime, store } = make();
      const flow = defineFlow(
        {
          name: 'greet',
          input: testSchema(
            (v) => (typeof v === 'string' ? undefined : 'must be a string'),
            (v) => (v as string).trim(),
          ),
        },
        async (ctx, name: string) => ctx.step('hello', () => `hello ${name}`),
      );
      expect(await codeOf(runtime.start(flow, 42 as never, { executionId: 'bad-input' }))).toBe(
        WorkflowErrorCode.INVALID_INPUT,
      );
      expect(await store.read('bad-input')).toEqual([]);
      const handle = await runtime.start(flow, '  ada ');
      expect(await handle.result()).toBe('hello ada');
    });

    it('a refused output fails the execution with INVALID_OUTPUT', async () => {
      const { runtime } = make();
      const flow = defineFlow(
        {
          name: 'bad-output',
          output: testSchema((v) => (typeof v === 'number' ? undefined : 'must be a number')),
        },
        async () => 'not a number' as unknown as number,
      );
      const handle = await runtime.start(flow, null);
      const error = (await handle.result().catch((caught) => caught)) as LoomError;
      expect(error.code).toBe('EXECUTION_FAILED');
      expect((error.fields.error as { code: string }).code).toBe(WorkflowErrorCode.INVALID_OUTPUT);
    });

    it('retries a step inside one durable step; a terminalError() stops it', async () => {
      const { runtime, store, clock } = make(1_000);
      const attempts: number[] = [];
      const flow = defineFlow({ name: 'retrying' }, async (ctx) => {
        const value = await ctx.step(
          'flaky',
          (effect) => {
            attempts.push(effect.attempt);
            if (effect.attempt < 3) throw new Error(`try ${effect.attempt}`);
            return 'third time';
          },
          { retry: { attempts: 5, backoff: { initialMs: 1, jitter: 'none' } } },
        );
        let terminal = 'none';
        try {
          await ctx.step(
            'refused',
            () => {
              throw terminalError('card declined');
            },
            { retry: { attempts: 5, backoff: { initialMs: 1 } } },
          );
        } catch (error) {
          terminal = ((error as LoomError).fields.error as { code?: string }).code ?? 'no code';
          terminal += ` after ${(error as LoomError).fields.attempts}`;
        }
        return { value, terminal };
      });
      const startedAtMs = clock.now();
      const handle = await runtime.start(flow, null);
      expect(await clock.runUntilSettled(handle.result())).toEqual({
        value: 'third time',
        terminal: 'TERMINAL after 1',
      });
      expect(attempts).toEqual([1, 2, 3]);
      // Backoff 1 ms then 2 ms, waited on the runtime's clock.
      expect(clock.now() - startedAtMs).toBe(3);
      const types = (await store.read(handle.executionId)).map((event) => event.type);
      expect(types.filter((type) => type === 'step.started')).toHaveLength(2);
      expect(types.filter((type) => type === 'step.attempt_failed')).toHaveLength(2);
    });

    it('step middleware runs inside the retry: it sees every attempt and its error', async () => {
      const { runtime, clock } = make(1_000);
      const seen: string[] = [];
      const logging: EffectMiddleware = (next) => async (effect) => {
        seen.push(`start ${effect.attempt}`);
        try {
          return await next(effect);
        } catch (error) {
          seen.push(`error ${effect.attempt}: ${(error as Error).message}`);
          throw error;
        }
      };
      let calls = 0;
      const flow = defineFlow({ name: 'logged' }, async (ctx) =>
        ctx.step(
          'flaky',
          () => {
            calls += 1;
            if (calls < 3) throw new Error(`try ${calls}`);
            return 'ok';
          },
          {
            retry: { attempts: 3, backoff: { initialMs: 1, jitter: 'none' } },
            middleware: [logging],
          },
        ),
      );
      const handle = await runtime.start(flow, null);
      expect(await clock.runUntilSettled(handle.result())).toBe('ok');
      expect(seen).toEqual(['start 1', 'error 1: try 1', 'start 2', 'error 2: try 2', 'start 3']);
    });

    it('a step timeout aborts the effect and fails the step', async () => {
      const { runtime, clock } = make();
      let aborted = false;
      const flow = defineFlow({ name: 'slow' }, async (ctx) =>
        ctx.step(
          'hang',
          (effect) =>
            new Promise((_, reject) => {
              effect.signal.addEventListener('abort', () => {
                aborted = true;
                reject(effect.signal.reason);
              });
            }),
          { timeout: 20 },
        ),
      );
      const startedAtMs = clock.now();
      const handle = await runtime.start(flow, null);
      const error = (await clock
        .runUntilSettled(handle.result())
        .catch((caught) => caught)) as LoomError;
      expect(clock.now() - startedAtMs).toBe(20);
      expect(error.code).toBe('EXECUTION_FAILED');
      expect(error.fields.step).toBe('hang');
      expect((error.fields.error as { code: string }).code).toBe('TIMEOUT');
      expect(aborted).toBe(true);
    });

    it("a step with a timeout gets the step's context, and a signal of its own when it reads one", async () => {
      const { runtime, clock } = make();
      const seen: Record<string, unknown>[] = [];
      const flow = defineFlow({ name: 'bounded' }, async (ctx) =>
        ctx.step(
          'quick',
          (effect) => {
            const { signal, ...fields } = effect;
            seen.push({
              ...fields,
              aborted: signal.aborted,
              clock: effect.clock !== undefined && effect.clock === runtime.clock,
            });
            return 'done';
          },
          { timeout: 1_000 },
        ),
      );
      const handle = await runtime.start(flow, null);
      expect(await clock.runUntilSettled(handle.result())).toBe('done');
      expect(seen).toEqual([
        {
          executionId: handle.executionId,
          stepIndex: 0,
          stepName: 'quick',
          idempotencyKey: `${handle.executionId}/0`,
          attempt: 1,
          aborted: false,
          clock: true,
        },
      ]);
    });

    it('sleeps for a duration text; bad durations are INVALID_ARGUMENT', async () => {
      const { runtime, clock } = make();
      const flow = defineFlow({ name: 'nap' }, async (ctx, duration: string) => {
        await ctx.sleep(duration);
        return 'rested';
      });
      const handle = await runtime.start(flow, '1h30m');
      await eventually(async () => runtime.activeExecutions.length === 0, 'suspension');
      await clock.advance(90 * 60_000 - 1);
      expect(await runtime.wakeDue()).toEqual([]);
      await clock.advance(1);
      expect(await runtime.wakeDue()).toEqual([handle.executionId]);
      expect(await handle.result()).toBe('rested');
      const bad = await runtime.start(flow, '3 days');
      const refused = (await bad.result().catch((caught) => caught)) as LoomError;
      expect(refused.code).toBe('EXECUTION_FAILED');
      expect((refused.fields.error as { code: string }).code).toBe(
        WorkflowErrorCode.INVALID_ARGUMENT,
      );
    });

    it('validates signal payloads before writing; the flow gets the parsed value', async () => {
      const { runtime, store } = make();
      const approval = testSchema(
        (v) => (typeof (v as { by?: unknown })?.by === 'string' ? undefined : 'needs by: string'),
        (v) => ({ by: (v as { by: string }).by.toUpperCase() }),
      );
      const flow = defineFlow({ name: 'approval', signals: { approve: approval } }, async (ctx) => {
        const signal = await ctx.waitForSignal('approve', { schema: approval });
        return signal.received ? signal.payload : null;
      });
      const handle = await runtime.start(flow, null, { executionId: 'approval-1' });
      expect(await codeOf(runtime.signal('approval-1', 'approve', { by: 7 }))).toBe(
        WorkflowErrorCode.INVALID_SIGNAL,
      );
      expect(await codeOf(runtime.signal('approval-1', 'reject', {}))).toBe(
        WorkflowErrorCode.INVALID_SIGNAL,
      );
      expect(await store.readSignals('approval-1')).toEqual([]);
      await eventually(async () => runtime.activeExecutions.length === 0, 'suspension');
      await runtime.signal('approval-1', 'approve', { by: 'ada' });
      await runtime.wakeDue();
      expect(await handle.result()).toEqual({ by: 'ADA' });
    });

    it('a cron schedule fires each occurrence once, skipping while the previous run is running', async () => {
      const { runtime, clock, store } = make();
      const release: Array<() => void> = [];
      const job = defineFlow({ name: 'job' }, async (ctx) =>
        ctx.step(
          'work',
          () => new Promise<string>((resolve) => release.push(() => resolve('done'))),
        ),
      );
      const scheduleId = await runtime.schedule(job, '*/5 * * * *', {
        name: 'five',
        overlap: 'skip',
      });
      expect(await runtime.schedule(job, '*/5 * * * *', { name: 'five' })).toBe(scheduleId);
      const idle = () =>
        eventually(
          async () => !runtime.activeExecutions.includes(scheduleId),
          'schedule suspension',
        );
      await idle();
      const [first, second, third] = occurrences('*/5 * * * *', clock.now(), 'UTC', 3) as [
        number,
        number,
        number,
      ];
      await clock.advance(first - clock.now());
      await runtime.wakeDue();
      await eventually(
        async () => (await store.read(`cron:five:${first}`)).length > 0,
        'first run',
      );
      await idle();
      // The next occurrence comes while the first run still works: it is skipped.
      await clock.advance(second - clock.now());
      await runtime.wakeDue();
      await idle();
      expect(await store.read(`cron:five:${second}`)).toEqual([]);
      for (const done of release) done();
      expect(await runtime.attach(`cron:five:${first}`).result()).toBe('done');
      await clock.advance(third - clock.now());
      await runtime.wakeDue();
      await eventually(
        async () => (await store.read(`cron:five:${third}`)).length > 0,
        'third run',
      );
      await eventually(async () => release.length === 2, 'third run effect');
      release[1]?.();
      expect(await runtime.attach(`cron:five:${third}`).result()).toBe('done');
      expect(await runtime.unschedule('five')).toBe(true);
    });
  });
}
