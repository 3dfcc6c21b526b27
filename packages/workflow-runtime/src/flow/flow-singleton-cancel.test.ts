// Singleton by key with `mode: 'cancel'` (ADR 0059) through the runtime: on memory, SQLite and
// Postgres, a newer enqueue of a key cancels the key's running run from another runtime (its
// cancel reason names the newer item), a waiting older item finishes cancelled without starting,
// the newest runs after, and never two runs of the key are in flight.
import { isLoomError, openMemory } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';
import { queueExecutionId } from './queue-worker.js';

const shared = sharedDatabases('flow-singleton-cancel');

const entered: number[] = [];

const render = defineFlow(
  {
    name: 'render-preview',
    singleton: { key: (input: { doc: string; n: number }) => input.doc, mode: 'cancel' },
  },
  async (ctx, input) => {
    await ctx.step('enter', async () => {
      entered.push(input.n);
    });
    // Waits long enough to be replaced (the durable sleep is where a cancel lands at once).
    await ctx.sleep(input.n === 0 ? 60_000 : 1);
    return `${input.doc}-${input.n}`;
  },
);

// Busy in its steps (no durable wait): a cancel from another runtime lands while a step runs.
const busy = defineFlow(
  {
    name: 'busy-preview',
    singleton: { key: (input: { doc: string; n: number }) => input.doc, mode: 'cancel' },
  },
  async (ctx, input) => {
    await ctx.step('enter', async () => {
      entered.push(input.n);
    });
    await ctx.step('work', () => new Promise((resolve) => setTimeout(resolve, 300)));
    await ctx.step('more', () => new Promise((resolve) => setTimeout(resolve, 300)));
    return input.n;
  },
);

for (const [name, make] of shared) {
  describe(`singleton mode 'cancel' on ${name}`, () => {
    it('a run cancelled mid-step on a live worker frees its key at once, not when its claim expires', async () => {
      entered.length = 0;
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      const one = createRuntime({ backend: a, flows: [busy], timerPollMs: 20 });
      const two = createRuntime({ backend: b, flows: [busy], timerPollMs: 20 });
      try {
        const first = await two.enqueue('busy', busy, { doc: 'd', n: 0 });
        // A claim far longer than any wait here: freeing the key by expiry would time out.
        const worker = one.work('busy', { pollMs: 5, claimTtlMs: 600_000 });
        await until('the first run entered', async () => entered.includes(0));
        const second = await two.enqueue('busy', busy, { doc: 'd', n: 1 });
        await until(
          'the newer run finished',
          async () => (await a.queues.get('busy', second.itemId))?.status === 'done',
        );
        expect(await a.queues.get('busy', first.itemId)).toMatchObject({
          outcome: 'cancelled',
          attempts: 1,
        });
        expect((await a.queues.get('busy', second.itemId))?.outcome).toBe('completed');
        expect(entered).toEqual([0, 1]);
        await worker.stop();
      } finally {
        await one.shutdown();
        await two.shutdown();
        if (b !== a) await b.close();
        await a.close();
        await database.drop();
      }
    });

    it('a newer start cancels the running run (naming itself), a waiting one never starts, the newest runs after', async () => {
      entered.length = 0;
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      const one = createRuntime({ backend: a, flows: [render], timerPollMs: 20 });
      const two = createRuntime({ backend: b, flows: [render], timerPollMs: 20 });
      try {
        const first = await two.enqueue('previews', render, { doc: 'd1', n: 0 });
        const worker = one.work('previews', { pollMs: 5, claimTtlMs: 1_000 });
        const firstRun = queueExecutionId('previews', first.itemId);
        await until('the first run entered', async () => entered.includes(0));
        // The newer start, from the other runtime: the first run is cancelled, naming it.
        const second = await two.enqueue('previews', render, { doc: 'd1', n: 1 });
        expect(second.duplicate).toBe(false);
        const events = await b.events.read(firstRun);
        const cancelled = events.find((event) => event.type === 'execution.cancelled');
        expect((cancelled?.payload as { reason?: string } | undefined)?.reason).toContain(
          second.itemId,
        );
        // A third start while the second waits: the second finishes cancelled without starting.
        await worker.pause();
        const third = await two.enqueue('previews', render, { doc: 'd1', n: 2 });
        const resumed = one.work('previews', { pollMs: 5, claimTtlMs: 1_000 });
        await until(
          'every item of d1 finished',
          async () =>
            (await a.queues.get('previews', third.itemId))?.status === 'done' &&
            (await a.queues.get('previews', second.itemId))?.status === 'done' &&
            (await a.queues.get('previews', first.itemId))?.status === 'done',
        );
        const replaced = await a.queues.get('previews', first.itemId);
        expect(replaced?.outcome).toBe('cancelled');
        const skipped = await a.queues.get('previews', second.itemId);
        expect(skipped?.outcome).toBe('cancelled');
        expect(await a.events.read(queueExecutionId('previews', second.itemId))).toEqual([]);
        const newest = await a.queues.get('previews', third.itemId);
        expect(newest?.outcome).toBe('completed');
        expect(await one.attach(queueExecutionId('previews', third.itemId)).result()).toBe('d1-2');
        expect(entered).toEqual([0, 2]);
        // Never two in flight: each item of the key was claimed after the one before finished.
        expect(replaced?.completedAtMs).toBeLessThanOrEqual(skipped?.startedAtMs as number);
        expect(skipped?.completedAtMs).toBeLessThanOrEqual(newest?.startedAtMs as number);
        await resumed.stop();
        await worker.stop();
      } finally {
        await one.shutdown();
        await two.shutdown();
        if (b !== a) await b.close();
        await a.close();
        await database.drop();
      }
    });
  });
}

describe("singleton mode 'cancel': options", () => {
  it('refuses concurrency beside it and a caller partitionKey', async () => {
    let caught: unknown;
    try {
      defineFlow(
        {
          name: 'both',
          singleton: { key: (input: { t: string }) => input.t, mode: 'cancel' },
          concurrency: { key: (input: { t: string }) => input.t, limit: 2 },
        },
        async () => null,
      );
    } catch (error) {
      caught = error;
    }
    expect(isLoomError(caught, WorkflowErrorCode.INVALID_ARGUMENT)).toBe(true);
    const runtime = createRuntime({ backend: openMemory(), flows: [render], timerPollMs: 0 });
    expect(
      await codeOf(runtime.enqueue('q', render, { doc: 'd', n: 0 }, { partitionKey: 'mine' })),
    ).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
    expect(await codeOf(runtime.start(render, { doc: 'd', n: 0 }))).toBe(
      WorkflowErrorCode.FLOW_CONTROL_NEEDS_QUEUE,
    );
    await runtime.shutdown();
  });
});
