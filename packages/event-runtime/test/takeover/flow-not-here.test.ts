// A rolling upgrade: node B runs without flow F, node C has it. Whatever wakes an execution of F
// (a signal, its timer, a child's end, a step's retry backoff), B must leave it due for C: B's
// timer claim takes nothing it cannot run, and C's next claim takes it (issue 27, item 6).
import { describe, expect, it } from 'vitest';
import type { Backend, Flow } from '../../src/index.js';
import { createKernelRuntime, type KernelRuntime } from '../../src/kernel.js';
import { until } from '../../src/testing/until.js';
import { takeoverTargets, within } from './backends.js';

/** A child both builds have: it waits for 'finish', so the test says where it ends. */
const kid: Flow<number, number> = {
  name: 'kid',
  run: async (ctx, n) => {
    await ctx.waitForSignal('finish');
    return ctx.step('double', () => n * 2);
  },
};
const other: Flow<null, string> = { name: 'other', run: async () => 'other' };

let release: () => void = () => {};
let hungCalls = 0;

let flaky = 0;
/** The flows of F's version the old node B lacks, one per way an execution is woken. */
const flows = {
  signalled: {
    name: 'upgraded-signalled',
    run: async (ctx) => {
      const got = await ctx.waitForSignal('go');
      return got.received ? `signalled ${String(got.payload)}` : 'no signal';
    },
  } satisfies Flow<null, string>,
  timed: {
    name: 'upgraded-timed',
    run: async (ctx) => {
      await ctx.sleep(300);
      return 'slept';
    },
  } satisfies Flow<null, string>,
  parent: {
    name: 'upgraded-parent',
    run: async (ctx) => `child gave ${await ctx.child(kid, 21, { executionId: 'kid-of-parent' })}`,
  } satisfies Flow<null, string>,
  hung: {
    name: 'upgraded-hung',
    run: (ctx) =>
      ctx.step('call', async () => {
        hungCalls += 1;
        if (hungCalls === 1) await new Promise<void>((resolve) => (release = resolve));
        return `call ${hungCalls}`;
      }),
  } satisfies Flow<null, string>,
  retried: {
    name: 'upgraded-retried',
    run: (ctx) =>
      ctx.step(
        'flaky',
        () => {
          flaky += 1;
          if (flaky === 1) throw new Error('first attempt fails');
          return `attempt ${flaky}`;
        },
        { retry: { attempts: 2, backoff: { initialMs: 300, jitter: 'none' } } },
      ),
  } satisfies Flow<null, string>,
};
const upgraded = Object.values(flows) as Flow<never, unknown>[];

/** Node B (the old build: no F) and node C (the new one), on one database, polls by hand. */
async function nodes(open: () => Promise<Backend>) {
  const errorsOfB: unknown[] = [];
  const backendOfB = await open();
  const backendOfC = await open();
  const b = createKernelRuntime({
    store: backendOfB.events,
    leases: backendOfB.leases,
    nodeId: 'node-b',
    flows: [kid, other] as Flow<never, unknown>[],
    timerPollMs: 0,
    recoverEveryMs: 0,
    inlineWaitMs: 0,
    recoverQuietMs: 0,
    onError: (error) => errorsOfB.push(error),
  });
  const c = createKernelRuntime({
    store: backendOfC.events,
    leases: backendOfC.leases,
    nodeId: 'node-c',
    flows: [...upgraded, kid as Flow<never, unknown>],
    timerPollMs: 0,
    recoverEveryMs: 0,
    inlineWaitMs: 0,
  });
  return {
    b,
    c,
    errorsOfB,
    close: async () => {
      await b.shutdown();
      await c.shutdown();
      await backendOfB.close();
      await backendOfC.close();
    },
  };
}

/** Waits until `executionId` is suspended in the log (its driver on C let it go). */
async function suspended(runtime: KernelRuntime, executionId: string): Promise<void> {
  await until(
    async () =>
      (await runtime.status(executionId)) === 'running' &&
      !runtime.activeExecutions.includes(executionId),
    `${executionId} to suspend and leave node C`,
  );
}

describe.each(takeoverTargets())('a node without the flow on $name', (target) => {
  it('leaves a signalled execution of a flow it lacks due: the node that has it claims it next', async () => {
    const { b, c, errorsOfB, close } = await nodes(target.fresh());
    try {
      const handle = await c.start(flows.signalled, null, { executionId: 'sig-1' });
      await suspended(c, 'sig-1');
      await b.signal('sig-1', 'go', 'now');
      expect(await b.wakeDue()).toEqual([]);
      expect(await c.wakeDue()).toEqual(['sig-1']);
      expect(await within(handle.result(), 'sig-1 to finish on node C')).toBe('signalled now');
      expect(errorsOfB).toEqual([]);
    } finally {
      await close();
    }
  });

  it('leaves a due timer of a flow it lacks: the node that has it claims it next', async () => {
    const { b, c, errorsOfB, close } = await nodes(target.fresh());
    try {
      const handle = await c.start(flows.timed, null, { executionId: 'timer-1' });
      await suspended(c, 'timer-1');
      // Due once its 300 ms pass; B asks first every time.
      await until(async () => {
        expect(await b.wakeDue()).toEqual([]);
        return (await c.wakeDue()).includes('timer-1');
      }, 'node C to claim timer-1 once it is due');
      expect(await within(handle.result(), 'timer-1 to finish on node C')).toBe('slept');
      expect(errorsOfB).toEqual([]);
    } finally {
      await close();
    }
  });

  it('a child that ends on it wakes a parent of a flow it lacks on the node that has it', async () => {
    const { b, c, errorsOfB, close } = await nodes(target.fresh());
    try {
      const handle = await c.start(flows.parent, null, { executionId: 'parent-1' });
      await suspended(c, 'parent-1');
      await suspended(c, 'kid-of-parent');
      // B has the child's flow: it takes the child's wake-up and runs it to its end, which makes
      // the parent due (and B's own claim after it must leave the parent alone).
      await b.signal('kid-of-parent', 'finish', null);
      expect(await b.wakeDue()).toEqual(['kid-of-parent']);
      expect(await within(b.attach('kid-of-parent').result(), 'the child to end on B')).toBe(42);
      await until(async () => {
        expect(await b.wakeDue()).toEqual([]);
        return (await c.wakeDue()).includes('parent-1');
      }, 'node C to claim parent-1 after its child ended on B');
      expect(await within(handle.result(), 'parent-1 to finish on node C')).toBe('child gave 42');
      expect(errorsOfB).toEqual([]);
    } finally {
      await close();
    }
  });

  it('leaves a step retry’s backoff of a flow it lacks: the node that has it claims it next', async () => {
    flaky = 0;
    const { b, c, errorsOfB, close } = await nodes(target.fresh());
    try {
      const handle = await c.start(flows.retried, null, { executionId: 'retry-1' });
      await suspended(c, 'retry-1');
      await until(async () => {
        expect(await b.wakeDue()).toEqual([]);
        return (await c.wakeDue()).includes('retry-1');
      }, 'node C to claim retry-1 once its backoff passed');
      expect(await within(handle.result(), 'retry-1 to finish on node C')).toBe('attempt 2');
      expect(errorsOfB).toEqual([]);
    } finally {
      await close();
    }
  });

  it('a recovery round leaves a running execution of a flow it lacks alone: no lease, no error', async () => {
    hungCalls = 0;
    const open = target.fresh();
    const { b, c, errorsOfB, close } = await nodes(open);
    const backendOfD = await open();
    const d = createKernelRuntime({
      store: backendOfD.events,
      leases: backendOfD.leases,
      nodeId: 'node-d',
      flows: upgraded,
      timerPollMs: 0,
      recoverEveryMs: 0,
      recoverQuietMs: 0,
    });
    try {
      await c.start(flows.hung, null, { executionId: 'hung-1' });
      await until(() => hungCalls === 1, 'the first call of hung-1 to start');
      // C goes away mid-call: the execution stays running in the log, with no lease.
      await c.shutdown();
      release();
      expect(await b.recover()).toEqual([]);
      expect(errorsOfB).toEqual([]);
      expect(await backendOfD.leases.get('hung-1')).toBeUndefined();
      expect(await d.recover()).toEqual(['hung-1']);
      expect(await within(d.attach('hung-1').result(), 'hung-1 to finish on node D')).toBe(
        'call 2',
      );
    } finally {
      release();
      await d.shutdown();
      await close();
      await backendOfD.close();
    }
  });
});
