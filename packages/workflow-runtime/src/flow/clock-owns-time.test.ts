import { InMemoryEventStore, InMemoryLeaseStore, systemClock } from '@loom/event-runtime';
import { leaseCalls, ManualClock } from '@loom/event-runtime/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { terminalError } from '../index.js';
import { defineFlow } from './define-flow.js';
import { createRuntime, type Runtime } from './flow-runtime.js';

/**
 * A frame of Loom's own code (any package's source or build), not a test's and not a
 * dependency's. vitest, Node and tinypool frames live under node_modules or node:.
 */
const loomFrame = /\/(packages|plugins|tools)\/[^/]+\/(src|dist)\/(?!.*\.test\.ts)/;

/** Records who arms a real timer while a test runs: stacks whose caller is Loom code. */
function watchRealTimers() {
  const armedByLoom: string[] = [];
  const real = { setTimeout: globalThis.setTimeout, setInterval: globalThis.setInterval };
  const record = () => {
    // Frame 0 is 'Error', 1 this function, 2 the wrapper below, 3 whoever armed the timer.
    const caller = new Error().stack?.split('\n')[3] ?? '';
    if (loomFrame.test(caller)) armedByLoom.push(caller.trim());
  };
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    record();
    return real.setTimeout(...args);
  }) as typeof setTimeout;
  globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
    record();
    return real.setInterval(...args);
  }) as typeof setInterval;
  return {
    armedByLoom,
    restore: () => {
      globalThis.setTimeout = real.setTimeout;
      globalThis.setInterval = real.setInterval;
    },
  };
}

const dayMs = 24 * 3_600_000;

describe('a ManualClock owns all of time', () => {
  let timers: ReturnType<typeof watchRealTimers>;
  const runtimes: Runtime[] = [];

  beforeEach(() => {
    timers = watchRealTimers();
  });
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.shutdown();
    timers.restore();
  });

  it('the watch sees a timer Loom arms on the system clock (so it can fail)', () => {
    systemClock.setTimer(() => undefined, 60_000)();
    systemClock.setRepeating(() => undefined, 60_000)();
    expect(timers.armedByLoom).toHaveLength(2);
  });

  it('a 3-day sleep, a retried step, lease renewals and timer polls complete by advancing the clock, and no real timer is armed', async () => {
    const clock = new ManualClock();
    const store = new InMemoryEventStore({ clock });
    const leases = new InMemoryLeaseStore({ clock });
    const runtime = createRuntime({
      store,
      leases,
      clock,
      leaseMode: 'eager',
      leaseTtlMs: 30_000,
      timerPollMs: 60_000,
      recoverEveryMs: 3_600_000,
      // Backoffs (10 s to 40 s) wait in memory, holding the lease; the 3-day sleep suspends.
      inlineWaitMs: 60_000,
    });
    runtimes.push(runtime);
    const attempts: number[] = [];
    const attemptAtMs: number[] = [];
    const flow = defineFlow({ name: 'slow-order' }, async (ctx) => {
      const charged = await ctx.step(
        'charge',
        (effect) => {
          attempts.push(effect.attempt);
          attemptAtMs.push(clock.now());
          if (effect.attempt < 4) throw new Error(`gateway busy (${effect.attempt})`);
          return 'charged';
        },
        {
          retry: {
            attempts: 5,
            backoff: { initialMs: 10_000, factor: 2, maxMs: 60_000, jitter: 'none' },
          },
        },
      );
      await ctx.sleep('3d');
      const shipped = await ctx.step('ship', (effect) => {
        if (effect.attempt > 1) throw terminalError('shipped twice');
        return 'shipped';
      });
      return [charged, shipped];
    });

    const startedAtMs = clock.now();
    const handle = await runtime.start(flow, null);
    let settled = false;
    const result = handle.result().finally(() => {
      settled = true;
    });
    await clock.runUntil(() => settled, 100_000);

    expect(await result).toEqual(['charged', 'shipped']);
    // Exponential backoff on the clock: 10 s, 20 s, 40 s between the attempts.
    expect(attempts).toEqual([1, 2, 3, 4]);
    expect(attemptAtMs.map((atMs) => atMs - startedAtMs)).toEqual([0, 10_000, 30_000, 70_000]);
    // Woken by the timer poll (every minute) at the first poll after the 3 days.
    const doneAtMs = clock.now() - startedAtMs;
    expect(doneAtMs).toBeGreaterThanOrEqual(70_000 + 3 * dayMs);
    expect(doneAtMs).toBeLessThan(70_000 + 3 * dayMs + 60_000);
    const types = (await store.read(handle.executionId)).map((event) => event.type);
    expect(types).toContain('execution.suspended');
    // The lease was renewed (every 10 s) while the step backed off, taken again on the wake-up.
    const calls = leaseCalls(runtime);
    expect(calls.renewMany).toBeGreaterThanOrEqual(6);
    expect(calls.acquireMany).toBe(2);
    expect(timers.armedByLoom).toEqual([]);
  });
});
