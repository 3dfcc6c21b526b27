// Singleton by key with `mode: 'cancel'` (ADR 0059) through the runtime: on memory, SQLite and
// Postgres, a newer enqueue of a key cancels the key's running run from another runtime (its
// cancel reason names the newer item), a waiting older item finishes cancelled without starting,
// the newest runs after, and never two runs of the key are in flight; an enqueuer whose cancel of
// older runs comes after its own item finished never cancels a newer run.
import { isLoomError, openMemory } from '@loom/event-runtime';
import { createKernelRuntime } from '@loom/event-runtime/kernel';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { flowScopedKey } from './flow-key.js';
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
        // The worker claims nothing more from here (the first run goes on, and its item is completed
        // when it ends): the second must still be waiting when the third comes. Paused only after
        // the second's enqueue, a worker that got the first run's cancel first claimed the second
        // and ran it to the end before the third came (a clean-clone CI run on Postgres,
        // 2026-12-07: 'completed', not 'cancelled').
        await worker.pause();
        // The newer start, from the other runtime: the first run is cancelled, naming it.
        const second = await two.enqueue('previews', render, { doc: 'd1', n: 1 });
        expect(second.duplicate).toBe(false);
        const events = await b.events.read(firstRun);
        const cancelled = events.find((event) => event.type === 'execution.cancelled');
        expect((cancelled?.payload as { reason?: string } | undefined)?.reason).toContain(
          second.itemId,
        );
        // A third start while the second waits: the second finishes cancelled without starting.
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
        // Claimed in the order they were enqueued. Not compared: one item's completedAtMs with the
        // next one's startedAtMs. Each is the clock read by its caller before its statement waited
        // for a connection, so a claim that ran after a completion may carry a time 1 ms earlier
        // (seen on Postgres under load); that two never run at once is the store's partition
        // limit, checked by the queue-store conformance and the simulator's key-limit invariant.
        expect(replaced?.startedAtMs).toBeLessThanOrEqual(skipped?.startedAtMs as number);
        expect(skipped?.startedAtMs).toBeLessThanOrEqual(newest?.startedAtMs as number);
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

/** What the newer run of `doc-export` saw of the older run when it began (its status). */
const olderSeen: string[] = [];
let statusOfOlder: (() => Promise<string>) | undefined;

/** Version v1 waits for good; v2 records how the older run stood when it entered. */
const exportFlow = (version: 'v1' | 'v2') =>
  defineFlow(
    {
      name: 'doc-export',
      version,
      singleton: { key: (input: { doc: string }) => input.doc, mode: 'cancel' },
    },
    async (ctx) => {
      if (version === 'v1') return (await ctx.waitForSignal('never', { timeout: '1h' })).received;
      await ctx.step('enter', async () => {
        olderSeen.push(await (statusOfOlder as () => Promise<string>)());
      });
      return true;
    },
  );

for (const [name, make] of shared) {
  describe(`singleton mode 'cancel' on ${name}: the enqueuer and the older run's worker both died`, () => {
    it('the newer run starts only after the older execution ended, though its item is unfinished', async () => {
      olderSeen.length = 0;
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      const [v1, v2] = [exportFlow('v1'), exportFlow('v2')];
      const old = createRuntime({ backend: a, flows: [v1], timerPollMs: 20, closeBackend: false });
      const fresh = createRuntime({ backend: b, flows: [v2], timerPollMs: 20 });
      try {
        const first = await old.enqueue('exports', v1, { doc: 'd' });
        const olderRun = queueExecutionId('exports', first.itemId);
        statusOfOlder = () => fresh.status(olderRun).catch(() => 'not started');
        old.work('exports', { pollMs: 5, claimTtlMs: 60_000 });
        await until('the older run waits', async () =>
          (await b.events.read(olderRun)).some((event) => event.type === 'execution.suspended'),
        );
        // Its worker dies: the claim ends (handed back, as an expiry would end it), nobody drives
        // the execution, and it stays unsettled (recovery anywhere may resume it).
        await old.shutdown();
        // The enqueuer writes the newer item (a deploy later: version v2, which claims apart from
        // v1) and dies before cancelling the older run: the item as runtime.enqueue writes it.
        const newer = await b.queues.enqueue({
          queue: 'exports',
          flow: 'doc-export',
          version: 'v2',
          input: { doc: 'd' },
          partitionKey: `singleton-cancel:${flowScopedKey('doc-export', 'd')}`,
          partitionConcurrencyMax: 1,
        });
        // A v2 worker: the older item (v1) is not its to claim, and its expired claim no longer
        // holds the key, so the newer item is admitted while the older is unfinished.
        fresh.work('exports', { pollMs: 5, claimTtlMs: 60_000 });
        const newerRun = queueExecutionId('exports', newer.itemId);
        await until(
          'the newer run started',
          async () => (await b.events.read(newerRun)).length > 0,
        );
        expect(await fresh.attach(newerRun).result()).toBe(true);
        // The older execution had ended when the newer one began, cancelled in its name.
        expect(olderSeen).toEqual(['cancelled']);
        const end = (await b.events.read(olderRun)).at(-1);
        expect(end?.type).toBe('execution.cancelled');
        expect((end?.payload as { reason?: string } | undefined)?.reason).toContain(newer.itemId);
      } finally {
        statusOfOlder = undefined;
        await old.shutdown();
        await fresh.shutdown();
        if (b !== a) await a.close();
        await database.drop();
      }
    });
  });
}

// Finishes at once for n = 1, waits for n = 2: the newest start of a key, still running.
const quickThenSlow = defineFlow(
  {
    name: 'slow-preview',
    singleton: { key: (input: { doc: string; n: number }) => input.doc, mode: 'cancel' },
  },
  async (ctx, input) => {
    await ctx.sleep(input.n === 1 ? 1 : 60_000);
    return input.n;
  },
);

for (const [name, make] of shared) {
  describe(`singleton mode 'cancel' on ${name}: an enqueuer late to cancel`, () => {
    it('an enqueue whose item finished before its cancel ran never cancels a newer run', async () => {
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      // The enqueuer's read of the key's items is held until released (a stalled process).
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const stalled = Object.create(b.queues) as typeof b.queues;
      stalled.unfinishedOfPartition = async (queue, key) => {
        await released;
        return b.queues.unfinishedOfPartition(queue, key);
      };
      const late = createRuntime({
        backend: Object.assign(Object.create(b), { queues: stalled }),
        flows: [quickThenSlow],
        timerPollMs: 20,
        closeBackend: false,
      });
      const worker = createRuntime({ backend: a, flows: [quickThenSlow], timerPollMs: 20 });
      try {
        const partition = `singleton-cancel:${flowScopedKey('slow-preview', 'd')}`;
        const enqueuing = late.enqueue('slow', quickThenSlow, { doc: 'd', n: 1 });
        let first: string | undefined;
        await until('the first item was written', async () => {
          first = (await a.queues.unfinishedOfPartition('slow', partition))[0]?.itemId;
          return first !== undefined;
        });
        // Its enqueuer stalls before cancelling older runs; a worker runs the item to its end.
        worker.work('slow', { pollMs: 5, claimTtlMs: 60_000 });
        await until(
          'the first item finished',
          async () => (await a.queues.get('slow', first as string))?.status === 'done',
        );
        // A newer start of the key, enqueued elsewhere, runs.
        const newer = await worker.enqueue('slow', quickThenSlow, { doc: 'd', n: 2 });
        const newerRun = queueExecutionId('slow', newer.itemId);
        await until(
          'the newer run waits',
          async () => (await worker.status(newerRun).catch(() => undefined)) === 'running',
        );
        // The first enqueue's cancel of its older runs goes through only now: the newer one is not.
        release();
        await enqueuing;
        expect(await worker.status(newerRun)).toBe('running');
        expect((await a.events.read(newerRun)).map((event) => event.type)).not.toContain(
          'execution.cancelled',
        );
      } finally {
        release();
        await late.shutdown();
        await worker.shutdown();
        if (b !== a) await b.close();
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

  it('refuses a priority (the newest start must run last) and the reserved partition prefix on other flows', async () => {
    const plain = defineFlow({ name: 'plain' }, async () => null);
    const runtime = createRuntime({
      backend: openMemory(),
      flows: [render, plain],
      timerPollMs: 0,
    });
    expect(await codeOf(runtime.enqueue('q', render, { doc: 'd', n: 0 }, { priority: 5 }))).toBe(
      WorkflowErrorCode.INVALID_ARGUMENT,
    );
    expect(
      await codeOf(
        runtime.enqueue('q', plain, null, { partitionKey: 'singleton-cancel:12:render-preview:d' }),
      ),
    ).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
    // Nothing was written by either refusal.
    expect((await runtime.queueStats('q')).depth).toBe(0);
    await runtime.shutdown();
  });
});

describe('flow-control keys are scoped to the flow', () => {
  it("flow 'a' with key 'b:c' and flow 'a:b' with key 'c' never share a singleton, debounce or dedupe window", async () => {
    const keyed = (name: string) =>
      defineFlow(
        { name, singleton: { key: (input: { k: string }) => input.k, mode: 'skip' } },
        async () => null,
      );
    const windowed = (name: string) =>
      defineFlow(
        { name, idempotency: { key: (input: { k: string }) => input.k, windowMs: 60_000 } },
        async () => null,
      );
    const debounced = (name: string) =>
      defineFlow(
        { name, debounce: { key: (input: { k: string }) => input.k, periodMs: 60_000 } },
        async (_ctx, input: { k: string }) => input.k,
      );
    const runtime = createRuntime({ backend: openMemory(), timerPollMs: 0 });
    for (const make of [keyed, windowed, debounced]) {
      const [a, ab] = [make('a'), make('a:b')];
      const first = await runtime.enqueue('keys', a as never, { k: 'b:c' });
      const second = await runtime.enqueue('keys', ab as never, { k: 'c' });
      expect(second.duplicate).toBe(false);
      expect(second.itemId).not.toBe(first.itemId);
      // Each item keeps its own flow's input.
      expect((await runtime.queues?.get('keys', first.itemId))?.input).toEqual({ k: 'b:c' });
      expect((await runtime.queues?.get('keys', second.itemId))?.flow).toBe('a:b');
    }
    await runtime.shutdown();
  });
});

describe("singleton mode 'cancel': an older item whose run already ended", () => {
  it('keeps the outcome its execution had when a worker died after the end and before completing the item', async () => {
    const quick = defineFlow(
      {
        name: 'quick-preview',
        singleton: { key: (input: { doc: string; n: number }) => input.doc, mode: 'cancel' },
      },
      async (ctx, input) => ctx.step('render', () => input.n),
    );
    const backend = openMemory();
    const runtime = createRuntime({ backend, flows: [quick], timerPollMs: 0, closeBackend: false });
    const dead = createKernelRuntime({
      store: backend.events,
      leases: backend.leases,
      timerPollMs: 0,
    });
    try {
      const older = await runtime.enqueue('q', quick, { doc: 'd', n: 0 });
      // A worker claims it, runs its execution to the end, and dies before completing the item.
      const [claimed] = await backend.queues.claim('q', {
        owner: 'dead',
        limit: 1,
        claimTtlMs: 50,
      });
      expect(claimed?.itemId).toBe(older.itemId);
      const olderRun = queueExecutionId('q', older.itemId);
      expect(
        await (
          await dead.start(quick as never, { doc: 'd', n: 0 }, { executionId: olderRun })
        ).result(),
      ).toBe(0);
      const newer = await runtime.enqueue('q', quick, { doc: 'd', n: 1 });
      const worker = runtime.work('q', { pollMs: 5, claimTtlMs: 1_000 });
      await until('both items finished', async () => {
        const [a, b] = [
          await backend.queues.get('q', older.itemId),
          await backend.queues.get('q', newer.itemId),
        ];
        return a?.status === 'done' && b?.status === 'done';
      });
      // The older item was re-claimed after its claim expired, found superseded, and ends as its
      // execution did: completed, not cancelled.
      expect(await backend.queues.get('q', older.itemId)).toMatchObject({ outcome: 'completed' });
      expect(await backend.queues.get('q', newer.itemId)).toMatchObject({ outcome: 'completed' });
      await worker.stop();
    } finally {
      await dead.shutdown();
      await runtime.shutdown();
      await backend.close();
    }
  });
});
