// Per-key concurrency (`defineFlow({ concurrency: { key, limit } })`, ADR 0059) through the
// runtime: two runtimes on one database never run more than `limit` runs of one key at once,
// and bad options or keys are typed errors that write nothing. The cross-process proof, with
// SIGKILL, is test/flow-control/concurrency-processes.test.ts.
import { openMemory } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, refusedOptionPath, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const shared = sharedDatabases('flow-concurrency', { memory: false });

for (const [name, make] of shared) {
  describe(`per-key concurrency on ${name}`, () => {
    it('two runtimes never run more than limit runs of one key at once; every item runs once', async () => {
      const database = await make();
      // One heap, two runtimes: a gauge of the runs of each key in their steps right now.
      const now = new Map<string, number>();
      const maxByKey = new Map<string, number>();
      const ran: string[] = [];
      const job = defineFlow(
        {
          name: 'tenant-job',
          concurrency: { key: (input: { id: string; tenant: string }) => input.tenant, limit: 2 },
        },
        async (ctx, input) =>
          ctx.step('run', async () => {
            const inKey = (now.get(input.tenant) ?? 0) + 1;
            now.set(input.tenant, inKey);
            maxByKey.set(input.tenant, Math.max(maxByKey.get(input.tenant) ?? 0, inKey));
            ran.push(input.id);
            await sleep(30);
            now.set(input.tenant, (now.get(input.tenant) ?? 1) - 1);
            return input.id;
          }),
      );
      const runtimes = [
        createRuntime({ backend: await database.open(), flows: [job], timerPollMs: 0 }),
        createRuntime({ backend: await database.open(), flows: [job], timerPollMs: 0 }),
      ];
      try {
        const ids: string[] = [];
        for (let index = 0; index < 18; index++) {
          const id = `i-${index}`;
          ids.push(id);
          const tenant = `tenant-${index % 3}`;
          await runtimes[index % 2]?.enqueue('jobs', job, { id, tenant }, { itemId: id });
        }
        const stored = await runtimes[0]?.queueStats('jobs');
        expect(stored?.depth).toBe(18);
        for (const runtime of runtimes) runtime.work('jobs', { pollMs: 10 });
        await until(
          'all 18 completed',
          async () => (await runtimes[0]?.queueStats('jobs'))?.completed === 18,
        );
        expect(ran.sort()).toEqual(ids.sort());
        // Each key reached its limit (the test could fail) and never went past it.
        expect([...maxByKey.values()]).toEqual([2, 2, 2]);
      } finally {
        for (const runtime of runtimes) await runtime.shutdown();
        await database.drop();
      }
    });
  });
}

describe('per-key concurrency: options and keys', () => {
  const job = defineFlow(
    { name: 'keyed', concurrency: { key: (input: { tenant: string }) => input.tenant, limit: 1 } },
    async (_ctx, input: { tenant: string }) => input.tenant,
  );

  it('files the item under the key and limit; the item carries them', async () => {
    const backend = openMemory();
    const runtime = createRuntime({ backend, flows: [job], timerPollMs: 0 });
    const { itemId } = await runtime.enqueue('jobs', job, { tenant: 'acme' });
    expect(await backend.queues.get('jobs', itemId)).toMatchObject({
      partitionKey: 'acme',
      partitionConcurrencyMax: 1,
    });
    await runtime.shutdown();
  });

  it('refuses bad definitions with INVALID_ARGUMENT naming the option', () => {
    const bad: Array<[unknown, string]> = [
      [{ key: (input: { t: string }) => input.t, limit: 0 }, 'concurrency.limit'],
      [{ key: (input: { t: string }) => input.t, limit: 1.5 }, 'concurrency.limit'],
      [{ key: (input: { t: string }) => input.t }, 'concurrency.limit'],
      [{ key: 'input.tenant', limit: 1 }, 'concurrency.key'],
      [null, 'concurrency'],
    ];
    for (const [concurrency, path] of bad)
      expect(refusedOptionPath({ concurrency: concurrency }), path).toBe(path);
  });

  it('a key that throws or is not a non-empty string is INVALID_FLOW_KEY; nothing is enqueued', async () => {
    const backend = openMemory();
    const picky = defineFlow(
      {
        name: 'picky',
        concurrency: {
          key: (input: { tenant?: unknown }) => {
            if (input.tenant === 'boom') throw new Error('no tenant boom');
            return input.tenant as string;
          },
          limit: 1,
        },
      },
      async () => null,
    );
    const runtime = createRuntime({ backend, flows: [picky], timerPollMs: 0 });
    for (const tenant of ['boom', '', 7, undefined]) {
      expect(await codeOf(runtime.enqueue('jobs', picky, { tenant }))).toBe(
        WorkflowErrorCode.INVALID_FLOW_KEY,
      );
    }
    expect(
      await codeOf(runtime.enqueue('jobs', picky, { tenant: 'a' }, { partitionKey: 'b' })),
    ).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
    expect((await runtime.queueStats('jobs')).depth).toBe(0);
    await runtime.shutdown();
  });

  it('runtime.start of a keyed flow is FLOW_CONTROL_NEEDS_QUEUE and writes nothing', async () => {
    const backend = openMemory();
    const runtime = createRuntime({ backend, flows: [job], timerPollMs: 0 });
    expect(await codeOf(runtime.start(job, { tenant: 'acme' }, { executionId: 'direct' }))).toBe(
      WorkflowErrorCode.FLOW_CONTROL_NEEDS_QUEUE,
    );
    expect(await backend.events.read('direct')).toEqual([]);
    await runtime.shutdown();
  });
});
