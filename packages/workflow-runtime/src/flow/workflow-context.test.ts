// The flow context's own checks and variants on memory, SQLite and Postgres: sleepUntil takes a
// Date and refuses what is no instant, onQuery and waitForUpdate refuse what defineQuery and
// defineUpdate did not make, a waitForUpdate times out, a plain signal under an update's name is
// refused, an answer of undefined reaches the caller as null, and a record (ctx.record) is
// written alone and answered from the log by a query and by a resume, and the context's operations
// work taken off it.
import { ManualClock } from '@loom/event-runtime/testing';
import type { EffectMiddleware } from '@loom/middleware';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { cleanupsAfterEach, testBackends, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { defineQuery } from './define-query.js';
import { defineUpdate, updateSignalName } from './define-update.js';
import { createRuntime } from './flow-runtime.js';

const ping = defineUpdate<void, undefined>('ping');
const stage = defineQuery<void, string>('stage');

/** What a context call threw: its code, or 'no throw'. */
async function codeOfCall(call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (error) {
    return (error as { code?: string }).code ?? 'no code';
  }
  return 'no throw';
}

/** Sleeps until the Date its input names, then reports the time it woke at. */
const sleeper = defineFlow({ name: 'ctx-sleeper' }, async (ctx, input: { atMs: number }) => {
  await ctx.sleepUntil(new Date(input.atMs));
  return ctx.now();
});

/** Calls the context with what it must refuse; returns each call's code. */
const misuse = defineFlow({ name: 'ctx-misuse' }, async (ctx) => {
  const codes: Record<string, string> = {};
  for (const [label, at] of [
    ['NaN', Number.NaN],
    ['negative', -1],
    ['fraction', 1.5],
    ['invalid date', new Date('not a date')],
  ] as const) {
    codes[`sleepUntil ${label}`] = await codeOfCall(() => ctx.sleepUntil(at));
  }
  codes['onQuery no function'] = await codeOfCall(() => ctx.onQuery(stage, 'x' as never));
  codes['onQuery no query'] = await codeOfCall(() => ctx.onQuery('stage' as never, () => 'x'));
  codes['waitForUpdate no update'] = await codeOfCall(() => ctx.waitForUpdate('ping' as never));
  return codes;
});

/** Waits for one `ping` update (with a timeout when asked to), answers it with undefined. */
const pinged = defineFlow(
  { name: 'ctx-pinged' },
  async (ctx, input: { timeout?: string }): Promise<string> => {
    try {
      const request = await ctx.waitForUpdate(
        ping,
        input.timeout === undefined ? undefined : { timeout: input.timeout },
      );
      if (!request.received) return 'timed out';
      await request.answer(undefined);
      return `answered ${request.updateId}`;
    } catch (error) {
      return (error as { code?: string }).code ?? 'no code';
    }
  },
);

/** Counts how often its record's function ran: a replay (a resume, a query) must not run it. */
let routed = 0;
/** Records a route over its input, then sleeps an hour: the query reads the route from the log. */
const router = defineFlow({ name: 'ctx-router' }, async (ctx, cents: number) => {
  let at = 'unrouted';
  ctx.onQuery(stage, () => at);
  at = await ctx.record('route', (effect) => {
    routed += 1;
    return `${cents > 1000 ? 'manual' : 'auto'} (attempt ${effect.attempt})`;
  });
  await ctx.sleep('1h');
  return at;
});

/** Where `signal` is: an own enumerable accessor (a spread carries it), else how it is not. */
function signalShape(target: object): string {
  const descriptor = Object.getOwnPropertyDescriptor(target, 'signal');
  if (descriptor === undefined) return 'not own';
  return descriptor.get !== undefined && descriptor.enumerable === true ? 'accessor' : 'other';
}

/** A middleware that passes the context on as the middleware README says: with a spread. */
const spreading: EffectMiddleware = (next) => (context) => {
  const passed = { ...context, seen: true };
  return next(passed);
};

/**
 * Takes its operations off the context (`const { step } = ctx`) and reports where `signal`
 * lives on the context and on a step's effect behind middleware (one class each: a literal with
 * a getter would be a hash table per execution), and what an effect behind a middleware that
 * spreads its context, under a timeout, sees of its signal.
 */
const detached = defineFlow({ name: 'ctx-detached' }, async (ctx) => {
  const { step, record, now } = ctx;
  const context = signalShape(ctx);
  const effect = await step(
    'timed',
    (attempt) => ({
      signal: signalShape(attempt),
      aborted: attempt.signal.aborted,
      attempt: attempt.attempt,
      stepName: attempt.stepName,
    }),
    { timeout: '1m' },
  );
  const spread = await step(
    'spread',
    (attempt) => ({
      live: attempt.signal instanceof AbortSignal && !attempt.signal.aborted,
      seen: (attempt as unknown as { seen?: boolean }).seen === true,
    }),
    { middleware: [spreading], timeout: '1m' },
  );
  const route = await record('route', () => 'auto');
  return { context, effect, spread, route, now: now() > 0 };
});

for (const [backend, open] of testBackends('ctxchecks')) {
  describe(`the flow context on ${backend}`, () => {
    const cleanups = cleanupsAfterEach();
    const make = async () => {
      const clock = new ManualClock();
      const made = await open(clock);
      const runtime = createRuntime({
        store: made.store,
        clock,
        flows: [sleeper, misuse, pinged, router, detached],
        timerPollMs: 0,
        inlineWaitMs: 0,
      });
      cleanups.push(async () => {
        await runtime.shutdown();
        await made.drop();
        await made.store.close();
      });
      const suspended = (id: string) =>
        until(`${id} suspends`, () => !runtime.activeExecutions.includes(id));
      return { runtime, store: made.store, clock, suspended };
    };

    it('sleepUntil takes a Date: the timer is armed at its instant and wakes there', async () => {
      const { runtime, store, clock, suspended } = await make();
      const atMs = clock.now() + 5_000;
      const handle = await runtime.start(sleeper, { atMs }, { executionId: 's-1' });
      await suspended('s-1');
      const scheduled = (await store.read('s-1')).find((event) => event.type === 'timer.scheduled');
      expect(scheduled?.payload).toMatchObject({ wakeAtMs: atMs });
      expect(await runtime.status('s-1')).toBe('running');
      await clock.advance(5_000);
      await until('s-1 wakes', async () => (await runtime.wakeDue(10)).includes('s-1'));
      expect(await handle.result()).toBe(atMs);
    });

    it('refuses what is no instant, query or update with INVALID_ARGUMENT, writing no operation', async () => {
      const { runtime, store } = await make();
      const handle = await runtime.start(misuse, undefined as never, { executionId: 'm-1' });
      const refused = WorkflowErrorCode.INVALID_ARGUMENT;
      expect(await handle.result()).toEqual({
        'sleepUntil NaN': refused,
        'sleepUntil negative': refused,
        'sleepUntil fraction': refused,
        'sleepUntil invalid date': refused,
        'onQuery no function': refused,
        'onQuery no query': refused,
        'waitForUpdate no update': refused,
      });
      const types = new Set((await store.read('m-1')).map((event) => event.type));
      expect(types.has('timer.scheduled')).toBe(false);
      expect(types.has('signal.waiting')).toBe(false);
    });

    it('a record is written alone, answered from the log by a query and by the resume after a sleep', async () => {
      const { runtime, store, clock, suspended } = await make();
      routed = 0;
      const handle = await runtime.start(router, 1_200, { executionId: 'r-1' });
      await suspended('r-1');
      const [, record] = await store.read('r-1');
      expect(record?.type).toBe('step.completed');
      expect(record?.payload).toEqual({
        index: 0,
        name: 'route',
        record: true,
        result: 'manual (attempt 1)',
      });
      // The query replays the log read-only: the record answers without running its function.
      expect(await runtime.query(stage, 'r-1')).toBe('manual (attempt 1)');
      await clock.advance(3_600_000);
      await until('r-1 wakes', async () => (await runtime.wakeDue(10)).includes('r-1'));
      expect(await handle.result()).toBe('manual (attempt 1)');
      expect(routed).toBe(1);
    });

    it("its operations work taken off it; signal is an own accessor that a middleware's spread carries", async () => {
      const { runtime } = await make();
      const handle = await runtime.start(detached, undefined as never, { executionId: 'd-1' });
      expect(await handle.result()).toEqual({
        context: 'accessor',
        effect: { signal: 'accessor', aborted: false, attempt: 1, stepName: 'timed' },
        // Before: the spread dropped the kernel context's signal and the timeout threw a TypeError.
        spread: { live: true, seen: true },
        route: 'auto',
        now: true,
      });
    });

    it('a waitForUpdate times out as received: false', async () => {
      const { runtime, clock, suspended } = await make();
      const handle = await runtime.start(pinged, { timeout: '1m' }, { executionId: 'p-1' });
      await suspended('p-1');
      await clock.advance(60_000);
      await until('p-1 wakes', async () => (await runtime.wakeDue(10)).includes('p-1'));
      expect(await handle.result()).toBe('timed out');
    });

    it("a plain signal under an update's name is INVALID_UPDATE in the flow; an answer of undefined reaches the caller as null", async () => {
      const { runtime, store, suspended } = await make();
      const plain = await runtime.start(pinged, {}, { executionId: 'p-2' });
      await suspended('p-2');
      await runtime.signal('p-2', updateSignalName('ping'), { arg: null });
      await until('p-2 wakes', async () => (await runtime.wakeDue(10)).includes('p-2'));
      expect(await plain.result()).toBe(WorkflowErrorCode.INVALID_UPDATE);

      const answered = await runtime.start(pinged, {}, { executionId: 'p-3' });
      await suspended('p-3');
      let settled = false;
      const reply = runtime.update(ping, 'p-3', undefined, { updateId: 'u-1' });
      reply.then(
        () => {
          settled = true;
        },
        () => {
          settled = true;
        },
      );
      await until(
        'the update is journaled',
        async () => (await store.readSignals('p-3')).length === 1,
      );
      await until('p-3 wakes', async () => settled || (await runtime.wakeDue(10)).includes('p-3'));
      expect(await reply).toBeNull();
      expect(await answered.result()).toBe('answered u-1');
    });
  });
}
