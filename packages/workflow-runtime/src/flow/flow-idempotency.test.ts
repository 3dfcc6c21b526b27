// A dedupe window for starts (`defineFlow({ idempotency: { key, windowMs } })`, ADR 0059)
// through the runtime: on memory, SQLite and Postgres, enqueues of one key racing from two
// runtimes write one run and answer it to every caller, also after it finished, until the window
// closes; bad options and keys are typed errors that write nothing.
import { openMemory } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, refusedOptionPath, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';

const shared = sharedDatabases('flow-idempotency');

const windowMs = 1_500;
const charge = defineFlow(
  {
    name: 'charge-order',
    idempotency: { key: (input: { order: string; n: number }) => input.order, windowMs },
  },
  async (ctx, input) => ctx.step('charge', () => `${input.order}-${input.n}`),
);

for (const [name, make] of shared) {
  describe(`dedupe window for starts on ${name}`, () => {
    it('racing enqueues of one key write one run and answer it, after it finished too, until the window closes', async () => {
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      const one = createRuntime({ backend: a, flows: [charge], timerPollMs: 0 });
      const two = createRuntime({ backend: b, flows: [charge], timerPollMs: 0 });
      try {
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, n) =>
            (n % 2 === 0 ? one : two).enqueue('orders', charge, { order: 'o-7', n }),
          ),
        );
        const written = answers.filter((answer) => !answer.duplicate);
        expect(written).toHaveLength(1);
        const runId = written[0]?.itemId as string;
        expect(answers.map((answer) => answer.itemId)).toEqual(answers.map(() => runId));
        const untilMs = (await a.queues.get('orders', runId))?.idempotency?.untilMs as number;
        expect(untilMs).toBeGreaterThan(Date.now());
        // The run finishes; within the window a start still answers it.
        const worker = one.work('orders', { pollMs: 5 });
        await until(
          'the o-7 run completed',
          async () => (await a.queues.get('orders', runId))?.status === 'done',
        );
        if (Date.now() < untilMs - 100) {
          expect(await two.enqueue('orders', charge, { order: 'o-7', n: 8 })).toEqual({
            itemId: runId,
            duplicate: true,
          });
        }
        expect(await one.attach(`queue:orders:${runId}`).result()).toMatch(/^o-7-\d$/);
        // Once the window closed, the key starts a new run.
        await until('the window closed', async () => Date.now() > untilMs + 5);
        const next = await two.enqueue('orders', charge, { order: 'o-7', n: 9 });
        expect(next.duplicate).toBe(false);
        expect(next.itemId).not.toBe(runId);
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

describe('dedupe window: options and keys', () => {
  it('refuses bad definitions with INVALID_ARGUMENT naming the option', () => {
    const key = (input: { t: string }) => input.t;
    const bad: Array<[unknown, string]> = [
      [{ key }, 'idempotency.windowMs'],
      [{ key, windowMs: 0 }, 'idempotency.windowMs'],
      [{ key, windowMs: 2.5 }, 'idempotency.windowMs'],
      [{ key: 'input.t', windowMs: 1_000 }, 'idempotency.key'],
      ['24h', 'idempotency'],
    ];
    for (const [idempotency, path] of bad)
      expect(refusedOptionPath({ idempotency: idempotency }), path).toBe(path);
  });

  it('a bad key is INVALID_FLOW_KEY and a direct start FLOW_CONTROL_NEEDS_QUEUE; nothing is written', async () => {
    const backend = openMemory();
    const picky = defineFlow(
      {
        name: 'picky',
        idempotency: {
          key: (input: { order?: unknown }) => {
            if (input.order === 'boom') throw new Error('no order boom');
            return input.order as string;
          },
          windowMs: 1_000,
        },
      },
      async () => null,
    );
    const runtime = createRuntime({ backend, flows: [picky], timerPollMs: 0 });
    for (const order of ['boom', '', 7, undefined, 'x'.repeat(200)]) {
      expect(await codeOf(runtime.enqueue('jobs', picky, { order }))).toBe(
        WorkflowErrorCode.INVALID_FLOW_KEY,
      );
    }
    expect((await runtime.queueStats('jobs')).depth).toBe(0);
    expect(await codeOf(runtime.start(picky, { order: 'a' }, { executionId: 'direct' }))).toBe(
      WorkflowErrorCode.FLOW_CONTROL_NEEDS_QUEUE,
    );
    expect(await backend.events.read('direct')).toEqual([]);
    await runtime.shutdown();
  });
});
