// Runs started by events (`runtime.publish`, `defineFlow({ trigger })`, ADR 0060) on memory,
// SQLite and Postgres: an event starts each triggered flow once under an id derived from it,
// duplicates start nothing, an event published while no runtime delivers waits for one, and bad
// names, ids and triggers are typed errors that write nothing. The cross-process proof, with a
// SIGKILL, is test/events/events-processes.test.ts.
import { InMemoryEventStore } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import type { EventDelivery } from './event-dispatch.js';
import { createRuntime, type Runtime } from './flow-runtime.js';
import { eventRunId, eventsQueue, type PublishedEvent } from './published-event.js';

/** The result of execution `id` once it exists (an event starts it in the background). */
async function resultOf<O>(runtime: Runtime, id: string): Promise<O> {
  await until(`execution ${id} started`, () =>
    runtime.status(id).then(
      () => true,
      () => false,
    ),
  );
  return runtime.attach<O>(id).result();
}

const databases = sharedDatabases('flow-events');

it('publish on a runtime without a queue store is QUEUE_STORE_MISSING', async () => {
  const runtime = createRuntime({ store: new InMemoryEventStore() });
  try {
    expect(await codeOf(runtime.publish({ name: 'shop/order.placed' }))).toBe(
      WorkflowErrorCode.QUEUE_STORE_MISSING,
    );
  } finally {
    await runtime.shutdown();
  }
});

type Order = PublishedEvent<{ orderId: string; total: number }>;

for (const [name, make] of databases) {
  describe(`runs started by events on ${name}`, () => {
    it('an event starts each triggered flow once, under an id derived from it; a duplicate starts nothing', async () => {
      const database = await make();
      const runs: string[] = [];
      const receipt = defineFlow(
        {
          name: 'receipt',
          trigger: {
            event: 'shop/order.placed',
            idempotency: (event: Order) => event.data.orderId,
          },
        },
        async (ctx, event) =>
          ctx.step('send', () => {
            runs.push(`receipt ${event.data.orderId} ${event.id}`);
            return event.data.total;
          }),
      );
      const audit = defineFlow(
        {
          name: 'audit',
          trigger: { event: 'shop/order.placed', if: (event: Order) => event.data.total >= 100 },
        },
        async (ctx, event) =>
          ctx.step('log', () => {
            runs.push(`audit ${event.id}`);
            return event.name;
          }),
      );
      const runtime = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [receipt, audit],
        eventDelivery: { pollMs: 20 },
      });
      try {
        const first = await runtime.publish({
          name: 'shop/order.placed',
          id: 'evt-1',
          data: { orderId: 'o-1', total: 150 },
        });
        expect(first).toEqual({ id: 'evt-1', duplicate: false });
        expect(await resultOf(runtime, eventRunId('receipt', 'o-1'))).toBe(150);
        expect(await resultOf(runtime, eventRunId('audit', 'evt-1'))).toBe('shop/order.placed');
        // The same id again: nothing written, nothing started.
        expect(
          await runtime.publish({
            name: 'shop/order.placed',
            id: 'evt-1',
            data: { orderId: 'o-9', total: 1 },
          }),
        ).toEqual({ id: 'evt-1', duplicate: true });
        // Another event of the same order: receipt's idempotency key makes it the same run; the
        // audit's filter refuses it.
        await runtime.publish({
          name: 'shop/order.placed',
          id: 'evt-2',
          data: { orderId: 'o-1', total: 5 },
        });
        expect(await resultOf(runtime, `queue:${eventsQueue}:evt-2`)).toEqual([
          { flow: 'receipt', executionId: eventRunId('receipt', 'o-1'), existing: true },
          { flow: 'audit', skipped: 'filter' },
        ]);
        await until('both events delivered', async () => {
          const stats = await runtime.queueStats(eventsQueue);
          return stats.completed === 2;
        });
        expect(runs.sort()).toEqual(['audit evt-1', 'receipt o-1 evt-1']);
        const receipts = await runtime.findExecutions({ flow: receipt });
        expect(receipts.executions.map((execution) => execution.id)).toEqual([
          eventRunId('receipt', 'o-1'),
        ]);
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });

    it('an event published while no runtime delivers it waits; two runtimes started later start its flow once', async () => {
      const database = await make();
      const runs: string[] = [];
      const welcome = defineFlow(
        { name: 'welcome', trigger: { event: 'user/signed-up' } },
        async (ctx, event: PublishedEvent<{ email: string }>) =>
          ctx.step('mail', () => {
            runs.push(event.data.email);
            return `welcome ${event.data.email}`;
          }),
      );
      // A publisher that runs no triggered flow: it only stores the event.
      const publisher = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
      });
      const published = await publisher.publish({
        name: 'user/signed-up',
        data: { email: 'ada@example.com' },
      });
      expect(published.duplicate).toBe(false);
      expect(published.id).toMatch(/^[0-9a-f-]{36}$/);
      expect((await publisher.queueStats(eventsQueue)).depth).toBe(1);
      await publisher.shutdown();

      const backends = [await database.open(), await database.open()];
      const workers: Runtime[] = backends.map((backend) =>
        createRuntime({
          backend,
          closeBackend: name !== 'memory',
          flows: [welcome],
          eventDelivery: { pollMs: 10 },
        }),
      );
      try {
        const runId = eventRunId('welcome', published.id);
        await until('the waiting event delivered', async () => {
          const stats = await workers[0]?.queueStats(eventsQueue);
          return stats?.completed === 1;
        });
        expect(await resultOf(workers[0] as Runtime, runId)).toBe('welcome ada@example.com');
        expect(runs).toEqual(['ada@example.com']);
      } finally {
        for (const worker of workers) await worker.shutdown();
        await database.drop();
      }
    });

    it('a runtime with eventDelivery: false publishes but delivers nothing: one that delivers runs it', async () => {
      const database = await make();
      const ranOn: string[] = [];
      // The same flow, defined once per runtime, so the run says which runtime delivered it.
      const flowOn = (runtime: string) =>
        defineFlow({ name: 'tally', trigger: { event: 'tally/bump' } }, async (ctx) =>
          ctx.step('bump', () => {
            ranOn.push(runtime);
            return runtime;
          }),
        );
      const quiet = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [flowOn('quiet')],
        eventDelivery: false,
      });
      const busy = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [flowOn('busy')],
        eventDelivery: { pollMs: 20 },
      });
      try {
        await quiet.publish({ name: 'tally/bump', id: 'b-1' });
        expect(await resultOf(busy, eventRunId('tally', 'b-1'))).toBe('busy');
        expect(ranOn).toEqual(['busy']);
      } finally {
        await quiet.shutdown();
        await busy.shutdown();
        await database.drop();
      }
    });

    it('bad names, ids and triggers are INVALID_ARGUMENT and write nothing', async () => {
      const database = await make();
      const runtime = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
      });
      try {
        for (const event of [
          { name: '' },
          { name: 'has space' },
          { name: 'x'.repeat(181) },
          { name: 7 as unknown as string },
          { name: 'ok', id: '' },
          { name: 'ok', id: 'i'.repeat(129) },
        ]) {
          expect(await codeOf(runtime.publish(event))).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
        }
        expect(await codeOf(runtime.publish(null as never))).toBe(
          WorkflowErrorCode.INVALID_ARGUMENT,
        );
        expect((await runtime.queueStats(eventsQueue)).depth).toBe(0);
        const body = async () => null;
        for (const trigger of [
          { event: 'bad name' },
          { event: 'ok', if: 'event.data.x == 1' },
          { event: 'ok', idempotency: 'event.data.id' },
          'ok',
        ]) {
          expect(() => defineFlow({ name: 'f', trigger: trigger as never }, body)).toThrow(
            expect.objectContaining({ code: WorkflowErrorCode.INVALID_ARGUMENT }),
          );
        }
        expect(() =>
          defineFlow(
            {
              name: 'f',
              trigger: { event: 'ok' },
              concurrency: { key: () => 'k', limit: 1 },
            },
            body,
          ),
        ).toThrow(expect.objectContaining({ code: WorkflowErrorCode.INVALID_ARGUMENT }));
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });

    it('an if or idempotency that throws refuses that flow only, and says so', async () => {
      const database = await make();
      const errors: unknown[] = [];
      const fragile = defineFlow(
        {
          name: 'fragile',
          trigger: {
            event: 'job/done',
            idempotency: (event: PublishedEvent<{ key?: string }>) => {
              if (event.data.key === undefined) throw new Error('no key');
              return event.data.key;
            },
          },
        },
        async () => 'fragile ran',
      );
      const sturdy = defineFlow(
        { name: 'sturdy', trigger: { event: 'job/done' } },
        async () => 'sturdy ran',
      );
      const runtime = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [fragile, sturdy],
        eventDelivery: { pollMs: 20 },
        onError: (error) => errors.push(error),
      });
      try {
        await runtime.publish({ name: 'job/done', id: 'j-1', data: {} });
        expect(await resultOf<EventDelivery[]>(runtime, `queue:${eventsQueue}:j-1`)).toEqual([
          {
            flow: 'fragile',
            refused:
              "flow 'fragile' not started for event j-1: its trigger.idempotency threw: Error: no key",
          },
          { flow: 'sturdy', executionId: eventRunId('sturdy', 'j-1'), existing: false },
        ]);
        expect(await resultOf(runtime, eventRunId('sturdy', 'j-1'))).toBe('sturdy ran');
        expect(errors).toEqual([
          expect.objectContaining({ code: WorkflowErrorCode.INVALID_ARGUMENT }),
        ]);
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });
  });
}
