// A driver that an operator's resume fenced out (its call hangs, say) must not keep its execution
// from being driven again on the node that holds it in memory: the wake-up the resume made due is
// claimed by that node's own timer poll as often as by another's (issue 27, item 9).
import { describe, expect, it } from 'vitest';
import type { Backend, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { until } from '../../src/testing/until.js';
import { takeoverTargets, within } from './backends.js';

/** A flow whose one step hangs on its first call until `release()`; later calls return at once. */
function stuckFlow() {
  let release: () => void = () => {};
  const hanging = new Promise<void>((resolve) => {
    release = resolve;
  });
  const calls = { count: 0 };
  const flow: Flow<null, string> = {
    name: 'stuck',
    run: (ctx) =>
      ctx.step('call', async () => {
        calls.count += 1;
        const call = calls.count;
        if (call === 1) await hanging;
        return `done on call ${call}`;
      }),
  };
  return { flow: flow as Flow<never, unknown>, calls, release: () => release() };
}

/**
 * What `loom resume` writes: the fence moves (the driving process can append no more) and the
 * run is suspended due now, so the next timer poll of a runtime running its flow replays it.
 */
async function operatorResume(backend: Backend, executionId: string): Promise<void> {
  const nowMs = Date.now();
  const fenceEpoch = await backend.events.fences.advance(executionId);
  const events = await backend.events.read(executionId);
  await backend.events.append(
    [
      {
        executionId,
        sequence: events.length,
        type: 'execution.suspended',
        payload: { wakeAtMs: nowMs, resumedBy: 'ana' },
        at: nowMs,
      },
    ],
    { fenceEpoch, status: 'suspended', wakeAtMs: nowMs },
  );
}

describe.each(takeoverTargets())('a fenced-out driver on $name', (target) => {
  it('the owner’s own timer poll claims the resume: it drives the run again, the hung call does not block it', async () => {
    const open = target.fresh();
    const backend = await open();
    const operator = await open();
    const stuck = stuckFlow();
    const errors: unknown[] = [];
    const owner = createKernelRuntime({
      store: backend.events,
      leases: backend.leases,
      flows: [stuck.flow],
      timerPollMs: 0,
      recoverEveryMs: 0,
      onError: (error) => errors.push(error),
    });
    try {
      await owner.start(stuck.flow, null, { executionId: 'stuck-1' });
      await until(() => stuck.calls.count === 1, 'the first call to start');
      await operatorResume(operator, 'stuck-1');
      // The owner's poll claims the wake-up it holds a driver for.
      expect(await owner.wakeDue()).toEqual(['stuck-1']);
      expect(
        await within(
          owner.attach<string>('stuck-1').result(),
          'stuck-1 to finish on a new driver after the resume (the old one hangs in its call)',
        ),
      ).toBe('done on call 2');
      expect(stuck.calls.count).toBe(2);
      stuck.release();
      const events = await operator.events.read('stuck-1');
      expect(events.filter((event) => event.type === 'execution.completed')).toHaveLength(1);
      expect(events.at(-1)?.payload).toMatchObject({ output: 'done on call 2' });
    } finally {
      stuck.release();
      await owner.shutdown();
      await operator.close();
      await backend.close();
    }
    expect(errors).toEqual([]);
  });
});
