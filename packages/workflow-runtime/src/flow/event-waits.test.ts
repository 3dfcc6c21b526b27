// `ctx.waitForEvent` and `cancelOn` (ADR 0060) on memory, SQLite and Postgres: a wait is woken
// once by the first matching event published after it started, by a runtime that registers no
// triggered flow, also after a restart with the event published while none ran; one event wakes
// every matching wait; a duplicate id wakes nothing; a timeout answers `received: false`; a
// matching event cancels the runs it names and no other; bad options are typed errors. The
// cross-process proof, with a SIGKILL, is test/events/event-waits-processes.test.ts.
import { type Backend, openMemory } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { eventWaitFlowName } from './event-wait.js';
import { createRuntime, type Runtime } from './flow-runtime.js';
import { eventRunId, eventsQueue } from './published-event.js';

const databases = sharedDatabases('event-waits');

/** Resolves once `count` waits have started (are in the execution index). */
async function waitsStarted(runtime: Runtime, count: number): Promise<void> {
  await until(`${count} waits registered`, async () => {
    const waits = await runtime.store.findExecutions({ flow: eventWaitFlowName });
    return waits.length >= count;
  });
}

/** A runtime's backend on `database`, closed by the runtime except the shared memory one. */
async function onDatabase(
  database: { open: () => Promise<Backend> },
  name: string,
): Promise<{ backend: Backend; closeBackend: boolean }> {
  return { backend: await database.open(), closeBackend: name !== 'memory' };
}

const checkout = defineFlow(
  { name: 'checkout', waitsForEvents: ['shop/order.paid'] },
  async (ctx, input: { orderId: string; timeout?: string }) => {
    const paid = await ctx.waitForEvent<{ orderId: string }>('shop/order.paid', {
      match: { 'data.orderId': input.orderId },
      timeout: input.timeout ?? '1h',
    });
    return paid.received ? `${paid.event.id}:${paid.event.data.orderId}` : 'timed out';
  },
);

describe('ctx.waitForEvent and cancelOn: bad options', () => {
  it('a bad waitsForEvents or cancelOn is INVALID_ARGUMENT at defineFlow', () => {
    const define = (options: object) => () =>
      defineFlow({ name: 'bad', ...options } as never, async () => null);
    for (const options of [
      { waitsForEvents: 'shop/order.paid' },
      { waitsForEvents: ['bad name'] },
      { cancelOn: [{ event: 'x/y', match: { 'data.orderId': 'orderId' } }] },
      { cancelOn: [{ event: 'x/y', match: { 'body.orderId': 'input.orderId' } }] },
      { cancelOn: [{ event: 'x/y', match: { 'data.orderId': 7 } }] },
      { cancelOn: [{ match: {} }] },
      { cancelOn: {} },
    ]) {
      expect(define(options), JSON.stringify(options)).toThrow(
        expect.objectContaining({ code: WorkflowErrorCode.INVALID_ARGUMENT }),
      );
    }
  });
});

for (const [name, make] of databases) {
  describe(`ctx.waitForEvent on ${name}`, () => {
    it('a wait takes the first matching event published after it started, once; others and duplicates wake nothing', async () => {
      const database = await make();
      // No flow here is triggered by the name: the waiting flow's declaration makes it deliver.
      const runtime = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [checkout],
        eventDelivery: { pollMs: 20 },
      });
      try {
        // Published before any wait: it must not be taken by one started later.
        await runtime.publish({ name: 'shop/order.paid', id: 'early', data: { orderId: 'o-1' } });
        await until('the early event delivered', async () => {
          return (await runtime.queueStats(eventsQueue)).completed === 1;
        });
        const one = await runtime.start(checkout, { orderId: 'o-1' }, { executionId: 'c-1' });
        const two = await runtime.start(checkout, { orderId: 'o-2' }, { executionId: 'c-2' });
        const three = await runtime.start(checkout, { orderId: 'o-2' }, { executionId: 'c-3' });
        await waitsStarted(runtime, 3);
        await runtime.publish({ name: 'shop/order.paid', id: 'other', data: { orderId: 'o-9' } });
        await runtime.publish({ name: 'shop/order.paid', id: 'p-1', data: { orderId: 'o-1' } });
        expect(await one.result()).toBe('p-1:o-1');
        // One event wakes every wait it matches.
        await runtime.publish({ name: 'shop/order.paid', id: 'p-2', data: { orderId: 'o-2' } });
        expect(await two.result()).toBe('p-2:o-2');
        expect(await three.result()).toBe('p-2:o-2');
        expect(
          await runtime.publish({ name: 'shop/order.paid', id: 'p-1', data: { orderId: 'o-1' } }),
        ).toEqual({ id: 'p-1', duplicate: true });
        await until('every event delivered', async () => {
          return (await runtime.queueStats(eventsQueue)).completed === 4;
        });
        // Each wait got exactly the one signal it took.
        for (const wait of await runtime.store.findExecutions({ flow: eventWaitFlowName })) {
          const signals = await runtime.store.readSignals(wait.executionId);
          expect(signals.map((signal) => signal.idempotencyKey)).toHaveLength(1);
        }
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });

    it('an event published before a wait started, delivered after it started, is not taken', async () => {
      const database = await make();
      // The waiter's runtime delivers nothing: the early event stays pending until `late` starts.
      const waiter = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [checkout],
        eventDelivery: false,
      });
      const early = await waiter.publish({
        name: 'shop/order.paid',
        id: 'early',
        data: { orderId: 'o-4' },
      });
      expect(early.duplicate).toBe(false);
      // The wait's start is stamped after the publish (same clock): wait for the next ms.
      const publishedAtMs = Date.now();
      await until('the clock moved on', () => Date.now() > publishedAtMs);
      const handle = await waiter.start(checkout, { orderId: 'o-4' }, { executionId: 'c-4' });
      await waitsStarted(waiter, 1);
      const late = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [checkout],
        eventDelivery: { pollMs: 20 },
      });
      try {
        await until('the early event delivered', async () => {
          return (await late.queueStats(eventsQueue)).completed === 1;
        });
        expect(await late.status('c-4')).not.toBe('settled');
        await late.publish({ name: 'shop/order.paid', id: 'on-time', data: { orderId: 'o-4' } });
        expect(await handle.result()).toBe('on-time:o-4');
      } finally {
        await waiter.shutdown();
        await late.shutdown();
        await database.drop();
      }
    });

    it('a runtime that knows only a triggered flow of the name wakes a wait it does not run', async () => {
      const database = await make();
      const waiter = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [checkout],
        eventDelivery: false,
      });
      const receipt = defineFlow(
        { name: 'receipt', trigger: { event: 'shop/order.paid' } },
        async (ctx) => ctx.step('mail', () => 'mailed'),
      );
      const other = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [receipt],
        eventDelivery: { pollMs: 20 },
      });
      try {
        const handle = await waiter.start(checkout, { orderId: 'o-6' }, { executionId: 'c-6' });
        await waitsStarted(waiter, 1);
        await waiter.publish({ name: 'shop/order.paid', id: 'p-6', data: { orderId: 'o-6' } });
        expect(await handle.result()).toBe('p-6:o-6');
        expect(await other.attach(`queue:${eventsQueue}:p-6`).result()).toEqual([
          { flow: 'receipt', executionId: eventRunId('receipt', 'p-6'), existing: false },
          { waitsWoken: 1 },
        ]);
      } finally {
        await waiter.shutdown();
        await other.shutdown();
        await database.drop();
      }
    });

    it('a wait with a timeout answers received: false once it passes', async () => {
      const database = await make();
      const runtime = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [checkout],
        eventDelivery: { pollMs: 20 },
        timerPollMs: 20,
      });
      try {
        const handle = await runtime.start(checkout, { orderId: 'o-5', timeout: '50ms' });
        expect(await handle.result()).toBe('timed out');
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });

    it('an event published while no runtime runs wakes the wait once one does', async () => {
      const database = await make();
      const first = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [checkout],
        eventDelivery: { pollMs: 20 },
      });
      await first.start(checkout, { orderId: 'o-7' }, { executionId: 'c-7' });
      await waitsStarted(first, 1);
      await until('c-7 suspended', async () => {
        const page = await first.findExecutions({ flow: checkout, status: 'suspended' });
        return page.executions.some((execution) => execution.id === 'c-7');
      });
      await first.shutdown();
      // A publisher that runs nothing.
      const publisher = createRuntime({
        ...(await onDatabase(database, name)),
      });
      await publisher.publish({ name: 'shop/order.paid', id: 'late', data: { orderId: 'o-7' } });
      await publisher.shutdown();
      const second = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [checkout],
        eventDelivery: { pollMs: 20 },
        timerPollMs: 20,
      });
      try {
        await second.recover();
        expect(await second.attach('c-7').result()).toBe('late:o-7');
      } finally {
        await second.shutdown();
        await database.drop();
      }
    });

    it('a name the flow does not declare, or a bad match, fails the run with INVALID_ARGUMENT', async () => {
      const database = await make();
      const sloppy = defineFlow(
        { name: 'sloppy', waitsForEvents: ['a/b'] },
        async (ctx, input: { name: string; match?: object }) => {
          try {
            await ctx.waitForEvent(input.name, { match: input.match as never, timeout: '1s' });
            return 'waited';
          } catch (error) {
            return (error as { code?: string }).code ?? 'no code';
          }
        },
      );
      const runtime = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [sloppy],
        eventDelivery: { pollMs: 20 },
      });
      try {
        for (const input of [
          { name: 'c/d' },
          { name: 'a/b', match: { 'data.x': { nested: true } } },
          { name: 'a/b', match: { 'payload.x': 1 } },
        ]) {
          const handle = await runtime.start(sloppy, input);
          expect(await handle.result(), JSON.stringify(input)).toBe(
            WorkflowErrorCode.INVALID_ARGUMENT,
          );
        }
        expect(await runtime.store.findExecutions({ flow: eventWaitFlowName })).toHaveLength(0);
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });

    it('options null is INVALID_ARGUMENT; no options waits for any event of the name, without a deadline', async () => {
      const database = await make();
      const bare = defineFlow(
        { name: 'bare', waitsForEvents: ['a/b'] },
        async (ctx, input: { nullOptions: boolean }) => {
          try {
            const got = input.nullOptions
              ? await ctx.waitForEvent('a/b', null as never)
              : await ctx.waitForEvent('a/b');
            return got.received ? got.event.id : 'timed out';
          } catch (error) {
            return (error as { code?: string }).code ?? 'no code';
          }
        },
      );
      const runtime = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [bare],
        eventDelivery: { pollMs: 20 },
      });
      try {
        const refused = await runtime.start(bare, { nullOptions: true });
        expect(await refused.result()).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
        expect(await runtime.store.findExecutions({ flow: eventWaitFlowName })).toHaveLength(0);
        const handle = await runtime.start(bare, { nullOptions: false }, { executionId: 'b-1' });
        await waitsStarted(runtime, 1);
        const [wait] = await runtime.store.findExecutions({ flow: eventWaitFlowName });
        const [started] = await runtime.store.read(wait?.executionId as string, { limit: 1 });
        // The wait's record: any event of the name (an empty match), and no timeout.
        expect(started?.payload).toHaveProperty('input', {
          event: 'a/b',
          match: {},
          timeoutMs: null,
        });
        await runtime.publish({ name: 'a/b', id: 'any-1', data: { whatever: true } });
        expect(await handle.result()).toBe('any-1');
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });
  });

  describe(`cancelOn on ${name}`, () => {
    it('a cancelOn without match cancels every run, but not one started after the event was published', async () => {
      const database = await make();
      const hold = defineFlow({ name: 'hold', cancelOn: [{ event: 'ops/stop' }] }, async (ctx) => {
        await ctx.waitForSignal('go');
        return 'went';
      });
      // This runtime delivers nothing: `ops/stop` #early waits until `late` starts.
      const quiet = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [hold],
        eventDelivery: false,
      });
      await quiet.publish({ name: 'ops/stop', id: 'early' });
      const publishedAtMs = Date.now();
      await until('the clock moved on', () => Date.now() > publishedAtMs);
      await quiet.start(hold, null, { executionId: 'h-1' });
      await quiet.start(hold, null, { executionId: 'h-2' });
      const late = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [hold],
        eventDelivery: { pollMs: 20 },
      });
      try {
        await until('the early stop delivered', async () => {
          return (await late.queueStats(eventsQueue)).completed === 1;
        });
        expect(await late.status('h-1')).not.toBe('settled');
        await late.publish({ name: 'ops/stop', id: 'now' });
        expect(await codeOf(late.attach('h-1').result())).toBe('EXECUTION_CANCELLED');
        expect(await codeOf(late.attach('h-2').result())).toBe('EXECUTION_CANCELLED');
        expect(await late.attach(`queue:${eventsQueue}:now`).result()).toEqual([
          { flow: 'hold', cancelled: 2 },
        ]);
      } finally {
        await quiet.shutdown();
        await late.shutdown();
        await database.drop();
      }
    });

    it('a matching event cancels the runs whose input it names, running or suspended, and no other', async () => {
      const database = await make();
      const ship = defineFlow(
        {
          name: 'ship',
          cancelOn: [{ event: 'shop/order.cancelled', match: { 'data.orderId': 'input.orderId' } }],
        },
        async (ctx, _input: { orderId: string }) => {
          await ctx.waitForSignal('shipped');
          return 'shipped';
        },
      );
      const runtime = createRuntime({
        ...(await onDatabase(database, name)),
        flows: [ship],
        eventDelivery: { pollMs: 20 },
      });
      try {
        await runtime.start(ship, { orderId: 'o-1' }, { executionId: 's-1' });
        await runtime.start(ship, { orderId: 'o-2' }, { executionId: 's-2' });
        await until('both suspended', async () => {
          return (
            (await runtime.findExecutions({ flow: ship, status: 'suspended' })).executions
              .length === 2
          );
        });
        await runtime.publish({
          name: 'shop/order.cancelled',
          id: 'x-1',
          data: { orderId: 'o-1' },
        });
        expect(await codeOf(runtime.attach('s-1').result())).toBe('EXECUTION_CANCELLED');
        const cancelled = await runtime.store.read('s-1');
        expect(cancelled.at(-1)?.type).toBe('execution.cancelled');
        expect(JSON.stringify(cancelled.at(-1)?.payload)).toContain(
          "cancelled by event 'shop/order.cancelled' (x-1)",
        );
        expect(await runtime.status('s-2')).not.toBe('settled');
        await runtime.signal('s-2', 'shipped', null);
        expect(await runtime.attach('s-2').result()).toBe('shipped');
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });
  });
}

describe('cancelOn beside a trigger of the same name', () => {
  it('the run an event starts is never cancelled by that event, even in the millisecond it was published', async () => {
    // A clock that does not move: the run's start and the event share one millisecond.
    const clock = new ManualClock();
    const order = defineFlow(
      {
        name: 'order-by-event',
        trigger: { event: 'shop/order.placed' },
        cancelOn: [{ event: 'shop/order.placed', match: { 'data.orderId': 'input.data.orderId' } }],
      },
      async (ctx) => {
        await ctx.waitForSignal('go');
        return 'went';
      },
    );
    const runtime = createRuntime({
      backend: openMemory({ clock }),
      clock,
      flows: [order],
      timerPollMs: 0,
      eventDelivery: { pollMs: 20 },
    });
    try {
      await runtime.publish({ name: 'shop/order.placed', id: 'p-1', data: { orderId: 'o-1' } });
      await until('the event delivered', async () => {
        return (await runtime.queueStats(eventsQueue)).completed === 1;
      });
      const [delivery] = (await runtime.attach(`queue:${eventsQueue}:p-1`).result()) as {
        executionId?: string;
      }[];
      const runId = delivery?.executionId as string;
      expect(runId).toBeDefined();
      expect(await runtime.status(runId)).not.toBe('settled');
      expect((await runtime.store.read(runId)).map((event) => event.type)).not.toContain(
        'execution.cancelled',
      );
    } finally {
      await runtime.shutdown();
    }
  });
});
