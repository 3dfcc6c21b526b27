// Event run ids and versioned delivery (ADR 0060, "Versioned delivery") on memory, SQLite and
// Postgres: flows whose names contain ':' get runs of their own from one event; a node of an older
// release (an unversioned delivery flow) claims none of the events published now and leaves them to
// a node of this version; an unversioned event (published by an older node) delivered here starts
// the id an older node would, and a later event of its key answers that run; a key whose run id is
// over the id limit refuses its flow only (and a legacy id that fits still starts).
import { describe, expect, it } from 'vitest';
import { sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime, type Runtime } from './flow-runtime.js';
import {
  eventDispatchFlowName,
  eventRunId,
  eventsQueue,
  legacyEventRunId,
  type PublishedEvent,
} from './published-event.js';

const databases = sharedDatabases('event-versions');

type Keyed = PublishedEvent<{ key: string }>;

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

const receipt = defineFlow(
  {
    name: 'receipt',
    trigger: { event: 'shop/paid', idempotency: (event: Keyed) => event.data.key },
  },
  async (ctx, event) => ctx.step('send', () => event.data.key),
);

for (const [name, make] of databases) {
  describe(`event run ids and delivery versions on ${name}`, () => {
    it("flow 'a' with key 'b:c' and flow 'a:b' with key 'c' each get a run from one event", async () => {
      const database = await make();
      const triggered = (flow: string, key: string) =>
        defineFlow(
          { name: flow, trigger: { event: 'ids/x', idempotency: () => key } },
          async (ctx) => ctx.step('ran', () => flow),
        );
      const runtime = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [triggered('a', 'b:c'), triggered('a:b', 'c')],
        eventDelivery: { pollMs: 20 },
      });
      try {
        await runtime.publish({ name: 'ids/x', id: 'x-1' });
        expect(await resultOf(runtime, eventRunId('a', 'b:c'))).toBe('a');
        expect(await resultOf(runtime, eventRunId('a:b', 'c'))).toBe('a:b');
        expect(await resultOf(runtime, `queue:${eventsQueue}:x-1`)).toEqual([
          { flow: 'a', executionId: eventRunId('a', 'b:c'), existing: false },
          { flow: 'a:b', executionId: eventRunId('a:b', 'c'), existing: false },
        ]);
        expect(eventRunId('a', 'b:c')).not.toBe(eventRunId('a:b', 'c'));
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });

    it('a node with only the unversioned delivery leaves events published now to a node of this version', async () => {
      const database = await make();
      // A node of the release before versions: its delivery of the name is unversioned (and, in
      // this stand-in, does nothing but say it ran).
      const oldRan: string[] = [];
      const oldDelivery = defineFlow(
        { name: eventDispatchFlowName('shop/paid') },
        async (ctx, event: Keyed) => ctx.step('deliver', () => oldRan.push(event.id)),
      );
      const old = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [oldDelivery],
        eventDelivery: false,
      });
      // A publisher of this version that delivers nothing itself.
      const publisher = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [receipt],
        eventDelivery: false,
      });
      let fresh: Runtime | undefined;
      try {
        old.work(eventsQueue, { pollMs: 5, claimTtlMs: 60_000 });
        await publisher.publish({ name: 'shop/paid', id: 'new-1', data: { key: 'k1' } });
        // An event as an older node publishes it, written after: the old node delivers that one,
        // so it has polled past the one before it, which it could not claim.
        const queues = publisher.queues;
        if (queues === undefined) throw new Error('no queue store');
        await queues.enqueue({
          queue: eventsQueue,
          itemId: 'old-1',
          flow: eventDispatchFlowName('shop/paid'),
          version: null,
          input: { name: 'shop/paid', id: 'old-1', data: { key: 'k0' }, publishedAtMs: 0 },
        });
        await until('the old node delivered its event', async () => oldRan.includes('old-1'));
        expect(oldRan).toEqual(['old-1']);
        expect((await queues.get(eventsQueue, 'new-1'))?.status).toBe('pending');
        // A node of this version delivers it.
        fresh = createRuntime({
          backend: await database.open(),
          closeBackend: name !== 'memory',
          flows: [receipt],
          eventDelivery: { pollMs: 20 },
        });
        expect(await resultOf(fresh, eventRunId('receipt', 'k1'))).toBe('k1');
        expect(oldRan).toEqual(['old-1']);
      } finally {
        await old.shutdown();
        await publisher.shutdown();
        await fresh?.shutdown();
        await database.drop();
      }
    });

    it('an unversioned event starts the legacy id; a later event of its key answers that run', async () => {
      const database = await make();
      const runtime = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [receipt],
        eventDelivery: { pollMs: 20 },
      });
      try {
        const queues = runtime.queues;
        if (queues === undefined) throw new Error('no queue store');
        // Published by a node of the release before versions.
        await queues.enqueue({
          queue: eventsQueue,
          itemId: 'old-2',
          flow: eventDispatchFlowName('shop/paid'),
          version: null,
          input: { name: 'shop/paid', id: 'old-2', data: { key: 'k2' }, publishedAtMs: 0 },
        });
        const legacy = legacyEventRunId('receipt', 'k2');
        expect(await resultOf(runtime, `queue:${eventsQueue}:old-2`)).toEqual([
          { flow: 'receipt', executionId: legacy, existing: false },
        ]);
        // Published now, same key: the run an older node would also have found is the one.
        await runtime.publish({ name: 'shop/paid', id: 'new-2', data: { key: 'k2' } });
        expect(await resultOf(runtime, `queue:${eventsQueue}:new-2`)).toEqual([
          { flow: 'receipt', executionId: legacy, existing: true },
        ]);
        const runs = await runtime.findExecutions({ flow: receipt });
        expect(runs.executions.map((execution) => execution.id)).toEqual([legacy]);
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });

    it('a key whose run id is too long refuses its flow only, and an id of the other form too long is no run', async () => {
      const database = await make();
      // The legacy id of this key is exactly executionIdLengthMax; the length-prefixed one is over.
      const longKey = (event: Keyed) =>
        `${event.data.key}${'k'.repeat(200 - 'event:long:'.length - event.data.key.length)}`;
      const long = defineFlow(
        { name: 'long', trigger: { event: 'ids/long', idempotency: longKey } },
        async (ctx, event: Keyed) => ctx.step('ran', () => event.id),
      );
      const short = defineFlow(
        { name: 'short', trigger: { event: 'ids/long' } },
        async (ctx, event: Keyed) => ctx.step('ran', () => event.id),
      );
      const errors: unknown[] = [];
      const runtime = createRuntime({
        backend: await database.open(),
        closeBackend: name !== 'memory',
        flows: [long, short],
        eventDelivery: { pollMs: 20 },
        onError: (error) => errors.push(error),
      });
      /** What the delivery of event `id` did, once it completed. */
      const delivered = async (id: string) => {
        const executionId = `queue:${eventsQueue}:${id}`;
        await until(`delivery ${id} completed`, () =>
          runtime.status(executionId).then(
            (status) => status === 'completed',
            () => false,
          ),
        );
        return runtime.attach(executionId).result();
      };
      try {
        const queues = runtime.queues;
        if (queues === undefined) throw new Error('no queue store');
        const old: Keyed = { name: 'ids/long', id: 'old-3', data: { key: 'a' }, publishedAtMs: 0 };
        expect(legacyEventRunId('long', longKey(old))).toHaveLength(200);
        // Published by an older node: its delivery there starts the legacy id, which fits; so does
        // this one (the length-prefixed id it looks for first cannot exist).
        await queues.enqueue({
          queue: eventsQueue,
          itemId: old.id,
          flow: eventDispatchFlowName('ids/long'),
          version: null,
          input: old as never,
        });
        expect(await delivered(old.id)).toEqual([
          { flow: 'long', executionId: legacyEventRunId('long', longKey(old)), existing: false },
          { flow: 'short', executionId: legacyEventRunId('short', old.id), existing: false },
        ]);
        // Published now, same key: the legacy run is the one.
        await runtime.publish({ name: 'ids/long', id: 'new-3', data: { key: 'a' } });
        expect(await delivered('new-3')).toEqual([
          { flow: 'long', executionId: legacyEventRunId('long', longKey(old)), existing: true },
          { flow: 'short', executionId: eventRunId('short', 'new-3'), existing: false },
        ]);
        // Another key of that length, no legacy run: 'long' is refused, 'short' still starts.
        await runtime.publish({ name: 'ids/long', id: 'new-4', data: { key: 'b' } });
        const [refused, started] = (await delivered('new-4')) as Array<Record<string, unknown>>;
        expect(refused).toMatchObject({ flow: 'long' });
        expect(String(refused?.refused)).toContain('executionIdLengthMax');
        expect(started).toEqual({
          flow: 'short',
          executionId: eventRunId('short', 'new-4'),
          existing: false,
        });
        expect(errors.map((error) => (error as { code?: unknown }).code)).toEqual([
          'INVALID_ARGUMENT',
        ]);
      } finally {
        await runtime.shutdown();
        await database.drop();
      }
    });
  });
}
