import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type EventStore,
  InMemoryEventStore,
  InMemoryQueueStore,
  type QueueStore,
} from '@loom/event-runtime';
import { SqliteEventStore, SqliteQueueStore } from '@loom/event-runtime/sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-queue-stats-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let fileCounter = 0;

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 1_000; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const charge = defineFlow({ name: 'charge' }, async (ctx, input: { ok: boolean }) => {
  const result = await ctx.step('charge', () => (input.ok ? 'charged' : 'declined'));
  if (result === 'declined') throw new Error('card declined');
  return result;
});

const backends: Array<[string, () => { store: EventStore; queues: QueueStore }]> = [
  ['memory', () => ({ store: new InMemoryEventStore(), queues: new InMemoryQueueStore() })],
  [
    'sqlite',
    () => {
      const store = SqliteEventStore.open({
        path: join(directory, `stats-${++fileCounter}.db`),
        migrate: true,
      });
      return { store, queues: new SqliteQueueStore(store.database) };
    },
  ],
];

for (const [backend, open] of backends) {
  describe(`queue stats on Runtime (${backend})`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    it('a worker records how each item’s execution ended; stats count depth and failures', async () => {
      const { store, queues } = open();
      const runtime = createRuntime({ store, queues, flows: [charge], timerPollMs: 0 });
      cleanups.push(async () => {
        await runtime.shutdown();
        await queues.close();
        await store.close();
      });
      await runtime.enqueue('payments', charge, { ok: true }, { itemId: 'a' });
      await runtime.enqueue('payments', charge, { ok: false }, { itemId: 'b' });
      await runtime.enqueue('payments', charge, { ok: true }, { itemId: 'c' });
      await runtime.enqueue('refunds', charge, { ok: true }, { itemId: 'r' });
      expect(await runtime.queueStats('payments')).toEqual({
        queue: 'payments',
        depth: 3,
        claimed: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
      });
      const worker = runtime.work('payments', { pollMs: 5 });
      cleanups.push(() => worker.stop());
      await eventually(async () => {
        const stats = await runtime.queueStats('payments');
        return stats.completed + stats.failed + stats.cancelled === 3;
      }, 'the payments queue to drain');
      await worker.stop();
      expect(await runtime.queueStats('payments')).toEqual({
        queue: 'payments',
        depth: 0,
        claimed: 0,
        completed: 2,
        failed: 1,
        cancelled: 0,
      });
      expect((await queues.get('payments', 'b'))?.outcome).toBe('failed');
      expect(await runtime.listQueues()).toEqual([
        { queue: 'payments', depth: 0, claimed: 0, completed: 2, failed: 1, cancelled: 0 },
        { queue: 'refunds', depth: 1, claimed: 0, completed: 0, failed: 0, cancelled: 0 },
      ]);
    });
  });
}

describe('queue stats without a queue store', () => {
  it('are QUEUE_STORE_MISSING', async () => {
    const runtime = createRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    try {
      expect(await codeOf(runtime.queueStats('payments'))).toBe(
        WorkflowErrorCode.QUEUE_STORE_MISSING,
      );
      expect(await codeOf(runtime.listQueues())).toBe(WorkflowErrorCode.QUEUE_STORE_MISSING);
    } finally {
      await runtime.shutdown();
    }
  });
});
