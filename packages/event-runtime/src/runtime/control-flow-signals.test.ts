import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../envelope.js';
import { ErrorCode, isLoomError } from '../errors.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { isFlowUnwind } from './core/flow-unwind.js';
import type { Flow } from './flow.js';
import { createKernelRuntime } from './runtime.js';

/** A runtime on the memory store that suspends every sleep, so a wake replays from the log. */
function setup(flows: Flow<never, unknown>[]) {
  const clock = new ManualClock();
  const store = new InMemoryEventStore({ clock });
  const runtime = createKernelRuntime({ store, clock, timerPollMs: 0, inlineWaitMs: 0, flows });
  return { clock, store, runtime };
}

/** Polls `check` every 5 ms; fails after 500 tries. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** What a flow's `catch` saw, as plain facts. */
function describeCaught(caught: unknown): { name: string; code: string | null; unwind: boolean } {
  const { name, code } = caught as { name?: unknown; code?: unknown };
  return {
    name: String(name),
    code: typeof code === 'string' ? code : null,
    unwind: isFlowUnwind(caught),
  };
}

describe('control flow never travels as an error code', () => {
  it('a flow catching around continueAsNew sees nothing named or coded as a cancellation', async () => {
    const caught: unknown[] = [];
    const counter: Flow<number, string> = {
      name: 'catching-counter',
      run: async (ctx, n) => {
        if (n > 0) return `generation ${n}`;
        try {
          await ctx.continueAsNew(n + 1);
        } catch (error) {
          caught.push(error);
        }
        // The execution has ended: every later operation unwinds the same way.
        try {
          await ctx.step('after', () => 'never');
        } catch (error) {
          caught.push(error);
        }
        return 'swallowed';
      },
    };
    const { runtime, store } = setup([counter as Flow<never, unknown>]);
    try {
      const handle = await runtime.start(counter, 0, { executionId: 'can-catch' });
      expect(await handle.result()).toBe('generation 1');
      const types = (await store.read('can-catch')).map((event) => event.type);
      expect(types[types.length - 1]).toBe('execution.continued_as_new');
      expect(caught.map(describeCaught)).toEqual([
        { name: 'ContinuedAsNew', code: null, unwind: true },
        { name: 'ContinuedAsNew', code: null, unwind: true },
      ]);
      for (const error of caught) {
        expect(isLoomError(error)).toBe(false);
        expect(String((error as Error).message)).toContain('can-catch#1');
      }
    } finally {
      await runtime.shutdown();
    }
  });

  it("a child's own error named 'Cancelled' stays a failure on replay; a cancelled child stays cancelled", async () => {
    const impostor: Flow<null, never> = {
      name: 'impostor-child',
      run: async () => {
        throw Object.assign(new Error('I only look cancelled'), { name: 'Cancelled' });
      },
    };
    // Runs (in memory, on this node) until it is cancelled.
    const busy: Flow<null, string> = {
      name: 'busy-child',
      run: async (ctx) =>
        ctx.step(
          'work',
          (effect) =>
            new Promise<string>((resolve) => {
              effect.signal.addEventListener('abort', () => resolve('aborted'));
            }),
        ),
    };
    // Every run of the parent (first run, and the replay after its sleep) records what it saw.
    const runs: JsonValue[] = [];
    const parent: Flow<null, JsonValue> = {
      name: 'watching-parent',
      run: async (ctx) => {
        const statusOf = async (run: () => Promise<unknown>) => {
          try {
            await run();
            return 'completed';
          } catch (error) {
            if (!isLoomError(error, ErrorCode.CHILD_FAILED)) throw error;
            return String(error.fields.status);
          }
        };
        const seen = {
          impostor: await statusOf(() => ctx.child(impostor, null)),
          busy: await statusOf(() => ctx.child(busy, null)),
        };
        runs.push(seen);
        await ctx.sleep(1_000);
        return seen;
      },
    };
    const { clock, runtime, store } = setup([
      parent as Flow<never, unknown>,
      impostor as Flow<never, unknown>,
      busy as Flow<never, unknown>,
    ]);
    try {
      const handle = await runtime.start(parent, null, { executionId: 'parent' });
      const working = async () =>
        (await store.read('parent.1')).some((event) => event.type === 'step.started');
      await until(working, 'the busy child at work');
      expect(await runtime.cancel('parent.1', 'not needed')).toBe(true);
      const sleeping = async () => {
        const types = (await store.read('parent')).map((event) => event.type);
        return types.includes('timer.scheduled') && types.at(-1) === 'execution.suspended';
      };
      // Without a timer poller, the parent resumes on wakeDue once the child's end reached it.
      await until(async () => {
        await runtime.wakeDue();
        return sleeping();
      }, "the parent's own sleep");
      await clock.advance(1_000);
      expect(await runtime.wakeDue()).toEqual(['parent']);
      const expected = { impostor: 'failed', busy: 'cancelled' };
      expect(await handle.result()).toEqual(expected);
      // The second run replayed both children from the log, not from memory.
      expect(runs).toEqual([expected, expected]);
    } finally {
      await runtime.shutdown();
    }
  });
});
