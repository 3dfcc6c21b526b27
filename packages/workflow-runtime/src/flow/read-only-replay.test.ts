// The read-only replay a query runs (ADR 0061), over hand-written logs: what each operation
// answers from its record (or parks on when the log has no outcome), and how a drift ends it.
// The runtime-level behaviour (a query over a real store's log) is in queries-updates.test.ts.
import type { ExecutionState, Flow, FlowContext, StepRecord } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { replayReadOnly } from './read-only-replay.js';

/** A running execution's state whose log has `steps`. */
function stateOf(
  steps: StepRecord[],
  status: ExecutionState['status'] = 'running',
): ExecutionState {
  return {
    executionId: 'e-1',
    flow: 'probe',
    version: null,
    input: { n: 1 },
    status,
    steps,
    consumedSignals: [],
    rootId: 'e-1',
    generation: 0,
    nextSequence: steps.length + 2,
  };
}

/** A kernel flow running `body`; what it saw goes in `seen`. */
function probe(body: (ctx: FlowContext, seen: unknown[]) => Promise<unknown>) {
  const seen: unknown[] = [];
  const flow: Flow<unknown, unknown> = { name: 'probe', run: (ctx) => body(ctx, seen) };
  return { flow, seen };
}

/** What a rejected operation threw, as `{ code, message, fields }`. */
async function failure(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    const { code, message, fields } = error as {
      code: string;
      message: string;
      fields: unknown;
    };
    return { code, message, fields };
  }
  throw new Error('expected a rejection');
}

const child: Flow<unknown, unknown> = { name: 'child-flow', run: async () => 'never runs' };

describe('replayReadOnly', () => {
  it('answers steps from their records: a result, null for none, a failure as STEP_FAILED', async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(await ctx.step('a', () => 'ran'));
      seen.push(await ctx.transaction('b', () => 'ran'));
      seen.push(await failure(ctx.step('c', () => 'ran')));
      seen.push(await failure(ctx.step('d', () => 'ran')));
      return 'done';
    });
    const replayed = await replayReadOnly(
      flow,
      stateOf([
        { name: 'a', status: 'completed', result: 7 },
        { name: 'b', status: 'completed' },
        {
          name: 'c',
          status: 'failed',
          attempts: 3,
          error: { name: 'Error', message: 'card declined' },
        },
        { name: 'd', status: 'failed' },
      ]),
      new ManualClock(),
    );
    expect(seen).toEqual([
      7,
      null,
      {
        code: 'STEP_FAILED',
        message: "step 2 ('c') of execution e-1 failed after 3 attempts: card declined",
        fields: {
          executionId: 'e-1',
          step: 'c',
          stepIndex: 2,
          attempts: 3,
          error: { name: 'Error', message: 'card declined' },
        },
      },
      {
        code: 'STEP_FAILED',
        message: "step 3 ('d') of execution e-1 failed: unknown error",
        fields: { executionId: 'e-1', step: 'd', stepIndex: 3, attempts: 1, error: null },
      },
    ]);
    expect(replayed).toMatchObject({ ended: true, operations: 4 });
  });

  it('parks at a step the log has no outcome of, and never runs its effect', async () => {
    let ran = 0;
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(await ctx.step('a', () => 'first'));
      seen.push(
        await ctx.step('b', () => {
          ran++;
          return 'second';
        }),
      );
    });
    const replayed = await replayReadOnly(
      flow,
      stateOf([
        { name: 'a', status: 'completed', result: 'first' },
        { name: 'b', status: 'started' },
      ]),
      new ManualClock(),
    );
    expect(seen).toEqual(['first']);
    expect(ran).toBe(0);
    expect(replayed).toMatchObject({ ended: false, operations: 2 });
  });

  it('replays recorded values, makes unrecorded ones without writing them', async () => {
    const clock = new ManualClock(5_000);
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(ctx.now(), ctx.random(), ctx.uuid());
      // Past the log's end: made afresh (the clock's time, a UUID), as a driver would.
      seen.push(ctx.now(), typeof ctx.random(), ctx.uuid().length);
    });
    await replayReadOnly(
      flow,
      stateOf([
        { kind: 'value', name: 'now', status: 'completed', result: 1_234 },
        { kind: 'value', name: 'random', status: 'completed' },
        { kind: 'value', name: 'uuid', status: 'completed', result: 'recorded-uuid' },
      ]),
      clock,
    );
    expect(seen).toEqual([1_234, null, 'recorded-uuid', clock.now(), 'number', 36]);
  });

  it("takes a timer's default name 'sleep', passes fired timers and parks at a pending one", async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      await ctx.sleep(1_000);
      seen.push('slept');
      await ctx.sleepUntil(9_000);
      seen.push('slept until');
      await ctx.sleep(1_000, 'nap');
      seen.push('napped');
    });
    const replayed = await replayReadOnly(
      flow,
      stateOf([
        { kind: 'timer', name: 'sleep', status: 'completed', wakeAtMs: 1_000 },
        { kind: 'timer', name: 'sleep', status: 'completed', wakeAtMs: 9_000 },
        { kind: 'timer', name: 'nap', status: 'started', wakeAtMs: 10_000 },
      ]),
      new ManualClock(),
    );
    expect(seen).toEqual(['slept', 'slept until']);
    expect(replayed).toMatchObject({ ended: false, operations: 3 });
  });

  it('answers signal waits: a timeout, a payload (null when none), and parks at an open wait', async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(await ctx.waitForSignal('a', { timeoutMs: 10 }));
      seen.push(await ctx.waitForSignal('b'));
      seen.push(await ctx.waitForSignal('c'));
      seen.push(await ctx.waitForSignal('d'));
    });
    const replayed = await replayReadOnly(
      flow,
      stateOf([
        { kind: 'signal', name: 'a', status: 'completed', wakeAtMs: 10 },
        { kind: 'signal', name: 'b', status: 'completed', signalId: 4, result: { ok: true } },
        { kind: 'signal', name: 'c', status: 'completed', signalId: 5 },
        { kind: 'signal', name: 'd', status: 'started', wakeAtMs: null },
      ]),
      new ManualClock(),
    );
    expect(seen).toEqual([
      { received: false },
      { received: true, payload: { ok: true }, signalId: 4 },
      { received: true, payload: null, signalId: 5 },
    ]);
    expect(replayed.ended).toBe(false);
  });

  it('answers children from their records: an output, a failure or a cancellation as CHILD_FAILED', async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(await ctx.child(child, 1));
      seen.push(await failure(ctx.child(child, 2)));
      seen.push(await failure(ctx.child(child, 3)));
      seen.push(await ctx.child(child, 4));
    });
    const replayed = await replayReadOnly(
      flow,
      stateOf([
        { kind: 'child', name: 'child-flow', status: 'completed', childId: 'e-1.0', result: 'out' },
        {
          kind: 'child',
          name: 'child-flow',
          status: 'failed',
          childId: 'e-1.1',
          cancelled: true,
          error: { name: 'LoomError', message: 'cancelled by operator' },
        },
        { kind: 'child', name: 'child-flow', status: 'failed' },
        { kind: 'child', name: 'child-flow', status: 'started', childId: 'e-1.3' },
      ]),
      new ManualClock(),
    );
    expect(seen).toEqual([
      'out',
      {
        code: 'CHILD_FAILED',
        message: 'child execution e-1.1 of e-1 was cancelled: cancelled by operator',
        fields: {
          executionId: 'e-1',
          childId: 'e-1.1',
          status: 'cancelled',
          error: { name: 'LoomError', message: 'cancelled by operator' },
          stepIndex: 1,
        },
      },
      {
        code: 'CHILD_FAILED',
        message: 'child execution  of e-1 failed: ',
        fields: { executionId: 'e-1', childId: '', status: 'failed', error: null, stepIndex: 2 },
      },
    ]);
    expect(replayed).toMatchObject({ ended: false, operations: 4 });
  });

  it('answers patched() as the log says: its own marker true, anything else recorded false', async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(ctx.patched('p1')); // the log marked it here: the new path
      seen.push(ctx.patched('p2')); // the log has a step here: old code passed this point
      seen.push(await ctx.step('a', () => 'ran'));
      seen.push(ctx.patched('p3')); // the log has another patch here, not this one
      seen.push(ctx.patched('other'));
      seen.push(await ctx.step('b', () => 'ran'));
      return 'done';
    });
    const replayed = await replayReadOnly(
      flow,
      stateOf([
        { kind: 'patch', name: 'p1', status: 'completed' },
        { name: 'a', status: 'completed', result: 'A' },
        { kind: 'patch', name: 'other', status: 'completed' },
        { name: 'b', status: 'completed', result: 'B' },
      ]),
      new ManualClock(),
    );
    // A patch check that answers false takes no slot of the log: 'a' and 'b' still meet theirs.
    expect(seen).toEqual([true, false, 'A', false, true, 'B']);
    // patched() is no operation of the replay's count: only the two steps are.
    expect(replayed).toMatchObject({ ended: true, operations: 2 });
  });

  it('marks an unrecorded patch by taking its slot, so later operations stay aligned', async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(await ctx.step('a', () => 'ran'));
      seen.push(ctx.patched('p'));
      seen.push(ctx.now());
    });
    const clock = new ManualClock(77);
    const replayed = await replayReadOnly(
      flow,
      stateOf([{ name: 'a', status: 'completed', result: 'A' }]),
      clock,
    );
    expect(seen).toEqual(['A', true, 77]);
    expect(replayed.ended).toBe(true);
  });

  it('a drift is NON_DETERMINISM, and every later operation throws it again even when the flow catches it', async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      try {
        await ctx.step('renamed', () => 'ran');
      } catch (error) {
        seen.push((error as { code: string }).code);
      }
      try {
        ctx.now();
      } catch (error) {
        seen.push((error as { code: string }).code);
      }
      return 'swallowed';
    });
    await expect(
      replayReadOnly(flow, stateOf([{ name: 'one', status: 'completed' }]), new ManualClock()),
    ).rejects.toMatchObject({
      code: 'NON_DETERMINISM',
      fields: { executionId: 'e-1', expected: 'one', actual: 'renamed' },
    });
    expect(seen).toEqual(['NON_DETERMINISM', 'NON_DETERMINISM']);
  });

  it('parks at continueAsNew: the successor has its own log', async () => {
    const { flow, seen } = probe(async (ctx, seen) => {
      seen.push(await ctx.step('a', () => 'ran'));
      await ctx.continueAsNew({ n: 2 });
      seen.push('after');
    });
    const replayed = await replayReadOnly(
      flow,
      stateOf([{ name: 'a', status: 'completed', result: 1 }], 'continued'),
      new ManualClock(),
    );
    expect(seen).toEqual([1]);
    expect(replayed).toMatchObject({ ended: false, operations: 1 });
  });
});
