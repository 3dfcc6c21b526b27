import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, codeOf, testBackends } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime, type Runtime } from './flow-runtime.js';

const backends = testBackends('find');

const order = defineFlow(
  { name: 'order', version: '2' },
  async (ctx, input: { fail?: boolean }) => {
    await ctx.step('reserve', () => 'reserved');
    if (input.fail === true) throw new Error('out of stock');
    return 'shipped';
  },
);
const orderV1 = defineFlow({ name: 'order', version: '1' }, async () => 'old');
const waiting = defineFlow({ name: 'waiting' }, async (ctx) => {
  await ctx.sleep('1h');
  return 'woke';
});
const rolling = defineFlow({ name: 'rolling' }, async (ctx, generation: number) => {
  if (generation < 1) await ctx.continueAsNew(generation + 1);
  return generation;
});

for (const [backend, open] of backends) {
  describe(`runtime.findExecutions on ${backend}`, () => {
    const cleanups = cleanupsAfterEach();

    const make = async (): Promise<{ clock: ManualClock; runtime: Runtime }> => {
      const clock = new ManualClock(1_000);
      const { store, drop } = await open(clock);
      const runtime = createRuntime({
        store,
        clock,
        timerPollMs: 0,
        inlineWaitMs: 0,
        flows: [order, orderV1, waiting, rolling],
      });
      cleanups.push(async () => {
        await runtime.shutdown();
        await drop();
        await store.close();
      });
      return { clock, runtime };
    };

    it('lists a flow’s executions by how they ended, by version and by time', async () => {
      const { clock, runtime } = await make();
      await (await runtime.start(order, {}, { executionId: 'o-1' })).result();
      await clock.advance(1_000);
      const failed = await runtime.start(order, { fail: true }, { executionId: 'o-2' });
      expect(await codeOf(failed.result())).not.toBe('resolved');
      await clock.advance(1_000);
      await (await runtime.start(orderV1, {}, { executionId: 'o-3' })).result();
      const sleeping = await runtime.start(waiting, {}, { executionId: 'w-1' });
      await runtime.cancel('w-1', 'no longer needed');
      expect(await codeOf(sleeping.result())).toBe('EXECUTION_CANCELLED');
      await runtime.start(waiting, {}, { executionId: 'w-2' });
      const chain = await runtime.start(rolling, 0, { executionId: 'r-1' });
      expect(await chain.result()).toBe(1);

      const page = await runtime.findExecutions({ flow: order });
      expect(page.executions.map((execution) => execution.id)).toEqual(['o-1', 'o-2', 'o-3']);
      expect(page.nextCursor).toBeUndefined();
      expect(page.executions[0]).toEqual({
        id: 'o-1',
        flow: 'order',
        version: '2',
        status: 'completed',
        createdAtMs: 1_000,
        updatedAtMs: 1_000,
        wakeAtMs: null,
      });
      expect(page.executions[1]).toMatchObject({ id: 'o-2', status: 'failed', createdAtMs: 2_000 });

      const ids = async (options: Parameters<Runtime['findExecutions']>[0]) =>
        (await runtime.findExecutions(options)).executions.map((execution) => execution.id);
      expect(await ids({ flow: 'order', version: '1' })).toEqual(['o-3']);
      expect(await ids({ flow: order, status: 'failed' })).toEqual(['o-2']);
      expect(await ids({ flow: order, createdFromMs: 2_000, createdBeforeMs: 3_000 })).toEqual([
        'o-2',
      ]);
      expect(await ids({ status: 'cancelled' })).toEqual(['w-1']);
      expect(await ids({ flow: waiting, status: 'suspended' })).toEqual(['w-2']);
      expect(
        (await runtime.findExecutions({ flow: waiting, status: 'suspended' })).executions,
      ).toMatchObject([{ id: 'w-2', status: 'suspended', wakeAtMs: 3_000 + 3_600_000 }]);
      expect(await ids({ flow: rolling, status: 'continued' })).toEqual(['r-1']);
      expect(await ids({ flow: rolling, status: 'completed' })).toHaveLength(1);
    });

    it('pages with the cursor it returns', async () => {
      const { runtime } = await make();
      for (let index = 0; index < 5; index++) {
        await (await runtime.start(order, {}, { executionId: `p-${index}` })).result();
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await runtime.findExecutions({
          flow: order,
          limit: 2,
          ...(cursor === undefined ? {} : { cursor }),
        });
        seen.push(...page.executions.map((execution) => execution.id));
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor !== undefined && pages < 10);
      expect(seen).toEqual(['p-0', 'p-1', 'p-2', 'p-3', 'p-4']);
      expect(pages).toBe(3);
    });

    it('bad filters are INVALID_ARGUMENT', async () => {
      const { runtime } = await make();
      expect(await codeOf(runtime.findExecutions({ status: 'done' as never }))).toBe(
        'INVALID_ARGUMENT',
      );
      expect(await codeOf(runtime.findExecutions({ flow: '' }))).toBe('INVALID_ARGUMENT');
    });
  });
}
