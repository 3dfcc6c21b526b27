import { createHook } from 'node:async_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode } from '../errors.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { Flow } from './flow.js';
import { LazyAbort } from './lazy-abort.js';
import { keepAlive } from './pollers.js';
import { createKernelRuntime } from './runtime.js';

/**
 * Work the kernel's hot path must not do (P5): counted, never timed. Each count is what one
 * in-memory execution does, asserted exactly, so a change that adds the work back fails here.
 */

const input = { order: 'A-1', lines: [{ sku: 'loom', qty: 2 }] };

/** Promises a fresh step's `ctx.step` call makes before it returns (an `async_hooks` count). */
const PROMISES_PER_STEP_CALL = 1;

const oneStep: Flow<typeof input, { ok: boolean }> = {
  name: 'one-step',
  run: async (ctx, value) => ctx.step('charge', () => ({ ok: value.lines.length === 1 })),
};

/** Counts `new AbortController()` while `work` runs (the kernel reads the global at call time). */
async function countControllers(work: () => Promise<void>): Promise<number> {
  const Original = globalThis.AbortController;
  let made = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      made++;
    }
  };
  try {
    await work();
  } finally {
    globalThis.AbortController = Original;
  }
  return made;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the in-memory hot path', () => {
  it('an execution whose effects never read a signal makes no AbortController', async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    const made = await countControllers(async () => {
      const handle = await runtime.start(oneStep, input, { executionId: 'no-signal' });
      await expect(handle.result()).resolves.toEqual({ ok: true });
    });
    expect(made).toBe(0);
    await runtime.shutdown();
  });

  it('an effect that reads its signal gets one, live and not aborted', async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    const seen: boolean[] = [];
    const made = await countControllers(async () => {
      const handle = await runtime.start(
        {
          name: 'reads-signal',
          run: async (ctx) => {
            await ctx.step('a', (effect) => {
              seen.push(effect.signal.aborted);
              return effect.signal === ctx.signal;
            });
            return ctx.step('b', (effect) => effect.signal === ctx.signal);
          },
        },
        null,
        { executionId: 'reads-signal' },
      );
      await expect(handle.result()).resolves.toBe(true);
    });
    expect(made).toBe(1);
    expect(seen).toEqual([false]);
    await runtime.shutdown();
  });

  it("the flow's context: signal an own accessor made on first read, its operations own functions that work taken off it", async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    const made = await countControllers(async () => {
      const handle = await runtime.start(
        {
          name: 'detached',
          run: async (ctx) => {
            // An object literal with a getter is a dictionary (a hash table per execution): the
            // context is one class, `signal` an own enumerable accessor (a spread carries it),
            // read here without calling it.
            const descriptor = Object.getOwnPropertyDescriptor(ctx, 'signal');
            const accessor = descriptor?.get !== undefined && descriptor.enumerable === true;
            const { step, record, now } = ctx;
            const charged = await step('charge', () => 'charged');
            const routed = await record('route', () => 'auto');
            return { accessor, charged, routed, now: now() > 0 };
          },
        } as Flow<unknown, unknown>,
        null,
        { executionId: 'detached' },
      );
      await expect(handle.result()).resolves.toEqual({
        accessor: true,
        charged: 'charged',
        routed: 'auto',
        now: true,
      });
    });
    expect(made).toBe(0);
    await runtime.shutdown();
  });

  it('JSON.stringify runs once per event: each payload is encoded once, input included', async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    const stringify = vi.spyOn(JSON, 'stringify');
    const handle = await runtime.start(oneStep, input, { executionId: 'encoded-once' });
    await handle.result();
    const calls = stringify.mock.calls.length;
    stringify.mockRestore();
    // execution.started, step.started, step.completed, execution.completed.
    expect((await runtime.store.read('encoded-once')).length).toBe(4);
    expect(calls).toBe(4);
    await runtime.shutdown();
  });
});

describe("a step's first attempt, driven by the machine's commands", () => {
  it('an effect that returns a value, a promise, a foreign thenable, or throws: each outcome as an awaited effect would give it', async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    const failed = (error: unknown) => (error as { code?: string }).code ?? String(error);
    const flow: Flow<null, unknown> = {
      name: 'outcomes',
      run: async (ctx) => {
        const noRetry = { retry: false as const };
        const value = await ctx.step('value', () => 'v', noRetry);
        const promised = await ctx.step('promised', async () => 'p', noRetry);
        const thenable = await ctx.step(
          'thenable',
          // biome-ignore lint/suspicious/noThenProperty: a foreign thenable is what this step returns
          () => ({ then: (resolve: (value: string) => void) => resolve('t') }) as never,
          noRetry,
        );
        const thrown = await ctx
          .step(
            'thrown',
            () => {
              throw new Error('sync');
            },
            noRetry,
          )
          .catch(failed);
        const rejected = await ctx
          .step('rejected', () => Promise.reject(new Error('async')), noRetry)
          .catch(failed);
        const badThen = await ctx
          .step(
            'bad-then',
            () =>
              ({
                // biome-ignore lint/suspicious/noThenProperty: a thenable whose then throws
                then: () => {
                  throw new Error('then threw');
                },
              }) as never,
            noRetry,
          )
          .catch(failed);
        return { value, promised, thenable, thrown, rejected, badThen };
      },
    };
    const handle = await runtime.start(flow, null, { executionId: 'outcomes' });
    await expect(handle.result()).resolves.toEqual({
      value: 'v',
      promised: 'p',
      thenable: 't',
      thrown: 'STEP_FAILED',
      rejected: 'STEP_FAILED',
      badThen: 'STEP_FAILED',
    });
    const failures = (await runtime.store.read('outcomes'))
      .filter((event) => event.type === 'step.failed')
      .map((event) => (event.payload as { error: { message: string } }).error.message);
    expect(failures).toEqual(['sync', 'async', 'then threw']);
    await runtime.shutdown();
  });

  it("a fresh step's call makes one promise, the step's own: no async frame, no grant promise", async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    let made = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'PROMISE') made++;
      },
    });
    const counts: number[] = [];
    const flow: Flow<null, string> = {
      name: 'counted-call',
      run: async (ctx) => {
        // Both steps' start records are queued before any barrier is answered: the calls make
        // what they make whatever the group commit is doing.
        const calls: Promise<string>[] = [];
        for (const name of ['first', 'second']) {
          made = 0;
          hook.enable();
          try {
            calls.push(ctx.step(name, () => name));
          } finally {
            hook.disable();
          }
          counts.push(made);
        }
        return (await Promise.all(calls)).join('+');
      },
    };
    const handle = await runtime.start(flow, null, { executionId: 'counted-call' });
    await expect(handle.result()).resolves.toBe('first+second');
    expect(counts).toEqual([PROMISES_PER_STEP_CALL, PROMISES_PER_STEP_CALL]);
    await runtime.shutdown();
  });
});

describe('LazyAbort', () => {
  it('an abort before anyone asked gives a signal already aborted with that reason', () => {
    const abort = new LazyAbort();
    const reason = new Error('stop');
    abort.abort(reason);
    abort.abort(new Error('later'));
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe(reason);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });

  it('a signal handed out before the abort hears it, once', () => {
    const abort = new LazyAbort();
    const signal = abort.signal;
    let heard = 0;
    signal.addEventListener('abort', () => heard++);
    expect(abort.signal).toBe(signal);
    abort.abort('cancelled');
    abort.abort('again');
    expect(heard).toBe(1);
    expect(signal.reason).toBe('cancelled');
  });

  it('a cancelled execution ends with the reason its effect saw', async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), timerPollMs: 0 });
    let reason: unknown;
    const handle = await runtime.start(
      {
        name: 'waits-for-abort',
        run: async (ctx) =>
          ctx.step(
            'wait',
            (effect) =>
              new Promise((_, reject) => {
                effect.signal.addEventListener('abort', () => {
                  reason = effect.signal.reason;
                  reject(effect.signal.reason);
                });
                void runtime.cancel('waits', 'operator');
              }),
          ),
      },
      null,
      { executionId: 'waits' },
    );
    await expect(handle.result()).rejects.toMatchObject({ code: ErrorCode.EXECUTION_CANCELLED });
    expect(reason).toMatchObject({ code: ErrorCode.EXECUTION_CANCELLED });
    await runtime.shutdown();
  });
});

describe('keepAlive', () => {
  it('holders on one clock share one timer, cancelled by the last release', () => {
    const clock = new ManualClock();
    const first = keepAlive(clock);
    const second = keepAlive(clock);
    expect(clock.pendingTimers).toBe(1);
    first();
    first();
    expect(clock.pendingTimers).toBe(1);
    second();
    expect(clock.pendingTimers).toBe(0);
    const third = keepAlive(clock);
    expect(clock.pendingTimers).toBe(1);
    third();
    expect(clock.pendingTimers).toBe(0);
  });
});
