import { kernelRuntimeSlot } from '@loom/event-runtime/kernel';
import { CountingEventStore, ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { nextOccurrence } from '../cron/next-occurrence.js';
import { parseCron } from '../cron/parse-cron.js';
import { cleanupsAfterEach, testBackends } from './backends.test-support.js';
import {
  type CronScheduleInput,
  cronRunsPerGeneration,
  cronScheduleFlow,
  cronScheduleId,
} from './cron-schedule.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';

const backends = testBackends('cron');

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 1_000; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const job = defineFlow({ name: 'job' }, async (ctx) => ctx.step('work', () => ctx.executionId));

for (const [backend, open] of backends) {
  describe(`cron schedules on ${backend}`, () => {
    const cleanups = cleanupsAfterEach();

    const make = async () => {
      const clock = new ManualClock();
      const { store, drop } = await open(clock);
      // Periodic recovery off: every tick jumps the clock a minute or more, which would fire a
      // recovery round racing the wake, and a schedule resumed by that round can still be
      // starting when `idle()` looks (nothing active yet), so the fire would be looked for early.
      // Background failures (a resume that failed after wakeDue claimed the schedule, a snapshot)
      // are kept, so a fire that never came says why.
      const errors: unknown[] = [];
      const runtime = createRuntime({
        store,
        clock,
        timerPollMs: 0,
        inlineWaitMs: 0,
        recoverEveryMs: 0,
        onError: (error) => errors.push(error),
      });
      cleanups.push(async () => {
        await runtime.shutdown();
        await drop();
        await store.close();
      });
      const idle = () =>
        eventually(async () => runtime.activeExecutions.length === 0, 'nothing running');
      const ran = async (name: string, dueMs: number) =>
        (await store.read(`cron:${name}:${dueMs}`, { limit: 1 })).length > 0;
      /**
       * Moves the clock to the next occurrence of `expression` and wakes what is due until
       * schedule `name` fired it. A fire whose step met a store error under load retries 1 s, 2 s,
       * 4 s, 8 s later on this clock, so the clock goes on in 1 s steps, at most through that
       * retry window (16 s), which stays inside the occurrence's minute.
       */
      const tick = async (
        expression: string,
        name: string,
      ): Promise<{ dueMs: number; woken: string[] }> => {
        await idle();
        const dueMs = nextOccurrence(parseCron(expression), clock.now(), 'UTC');
        await clock.advance(dueMs - clock.now());
        const woken: string[] = [];
        for (let second = 0; second <= 16; second++) {
          if (second > 0) await clock.advance(1_000);
          woken.push(...(await runtime.wakeDue()));
          await idle();
          if (await ran(name, dueMs)) break;
        }
        return { dueMs, woken };
      };
      /** Asserts the fire of `dueMs` ran; when it did not, the message says what was woken and why. */
      const fired = async (name: string, tickResult: { dueMs: number; woken: string[] }) => {
        const did = await ran(name, tickResult.dueMs);
        const why = did
          ? ''
          : `no run of ${name} at ${tickResult.dueMs}: woken ${JSON.stringify(tickResult.woken)}, ` +
            `background errors: ${errors.map((error) => String(error)).join(' | ') || 'none'}`;
        expect(why).toBe('');
      };
      const inputOf = async (executionId: string) =>
        (await store.read(executionId, { limit: 1 }))[0]?.payload as unknown as {
          input: CronScheduleInput;
        };
      return { clock, store, runtime, idle, tick, ran, fired, inputOf };
    };

    it(`unschedule stops a schedule that continued as new after ${cronRunsPerGeneration} fires`, async () => {
      const { runtime, store, tick, ran, fired } = await make();
      await runtime.schedule(job, '* * * * *', { name: 'minutely' });
      for (let fire = 0; fire < cronRunsPerGeneration + 2; fire++) {
        await fired('minutely', await tick('* * * * *', 'minutely'));
      }
      expect(await store.read('cron:minutely#1', { limit: 1 })).toHaveLength(1);
      expect(await runtime.unschedule('minutely')).toBe(true);
      expect(await runtime.unschedule('minutely')).toBe(false);
      const { dueMs, woken } = await tick('* * * * *', 'minutely');
      expect(woken).toEqual([]);
      expect(await ran('minutely', dueMs)).toBe(false);
    });

    it('schedule after unschedule starts the schedule again', async () => {
      const { runtime, tick, ran } = await make();
      await runtime.schedule(job, '*/5 * * * *', { name: 'again' });
      const first = await tick('*/5 * * * *', 'again');
      expect(await ran('again', first.dueMs)).toBe(true);
      expect(await runtime.unschedule('again')).toBe(true);
      const id = await runtime.schedule(job, '*/5 * * * *', { name: 'again' });
      expect(await runtime.status(id)).toBe('running');
      const second = await tick('*/5 * * * *', 'again');
      expect(await ran('again', second.dueMs)).toBe(true);
      // Calling it again with the same definition (every boot) changes nothing.
      expect(await runtime.schedule(job, '*/5 * * * *', { name: 'again' })).toBe(id);
    });

    it('schedule with a changed expression, time zone or options applies it and records why', async () => {
      const { runtime, store, tick, ran, inputOf } = await make();
      const first = await runtime.schedule(job, '0 * * * *', { name: 'changing' });
      expect(await runtime.schedule(job, '0 * * * *', { name: 'changing' })).toBe(first);
      const second = await runtime.schedule(job, '30 * * * *', { name: 'changing' });
      expect(second).not.toBe(first);
      expect((await inputOf(second)).input.expression).toBe('30 * * * *');
      const cancelled = (await store.read(first)).at(-1);
      expect(cancelled?.type).toBe('execution.cancelled');
      expect(String((cancelled?.payload as { reason?: string } | undefined)?.reason)).toMatch(
        /expression '0 \* \* \* \*' -> '30 \* \* \* \*'/,
      );
      const fired = await tick('30 * * * *', 'changing');
      expect(await ran('changing', fired.dueMs)).toBe(true);
      const third = await runtime.schedule(job, '30 * * * *', {
        name: 'changing',
        timezone: 'Asia/Kolkata',
        overlap: 'allow',
      });
      expect(third).not.toBe(second);
      const applied = (await inputOf(third)).input;
      expect([applied.timezone, applied.overlap]).toEqual(['Asia/Kolkata', 'allow']);
      expect(await runtime.status(second)).toBe('cancelled');
      expect(await runtime.status(third)).toBe('running');
    });

    it('schedule() on a later boot with the same definition reads and writes nothing', async () => {
      const { runtime, store, clock, tick } = await make();
      const id = await runtime.schedule(job, '*/5 * * * *', { name: 'boot' });
      await tick('*/5 * * * *', 'boot');
      const counting = new CountingEventStore(store);
      const booted = createRuntime({ store: counting, clock, timerPollMs: 0, inlineWaitMs: 0 });
      expect(await booted.schedule(job, '*/5 * * * *', { name: 'boot' })).toBe(id);
      expect(counting.counts.appends).toBe(0);
      expect(booted.activeExecutions).toEqual([]);
      await booted.shutdown();
    });

    it('a generation started while its predecessor was being unscheduled stops itself', async () => {
      const { runtime, inputOf } = await make();
      const first = await runtime.schedule(job, '0 0 * * *', { name: 'racing' });
      // unschedule() cancelled generation 0 just as it was starting generation 1.
      expect(await runtime.cancel(first, 'unscheduled')).toBe(true);
      const flow = cronScheduleFlow(runtime[kernelRuntimeSlot], () => job as never);
      const next = await runtime[kernelRuntimeSlot].start(
        flow,
        { ...(await inputOf(first)).input, generation: 1, continuedFrom: first },
        { executionId: cronScheduleId('racing', 1) },
      );
      expect(await next.result()).toEqual({ stoppedBecause: `${first} was cancelled` });
      expect(await runtime.describeSchedule('racing')).toMatchObject({
        executionId: 'cron:racing#1',
        active: false,
      });
      expect(await runtime.unschedule('racing')).toBe(false);
      const again = await runtime.schedule(job, '0 0 * * *', { name: 'racing' });
      expect(again).toBe('cron:racing#2');
      expect(await runtime.describeSchedule('racing')).toEqual({
        executionId: again,
        active: true,
        definition: {
          expression: '0 0 * * *',
          timezone: 'UTC',
          overlap: 'skip',
          catchUp: 'latest',
          flow: 'job',
          version: null,
          input: null,
        },
      });
    });

    it('a schedule name that would collide with run or generation ids is INVALID_ARGUMENT', async () => {
      const { runtime, store } = await make();
      for (const name of ['a:1', 'a#1', '']) {
        await expect(runtime.schedule(job, '* * * * *', { name })).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
        });
      }
      expect(await runtime.describeSchedule('a')).toBeUndefined();
      expect(await store.read('cron:a:1')).toEqual([]);
    });
  });
}
