import {
  ErrorCode,
  type EventStore,
  InMemoryEventStore,
  LoomError,
  type StoredEvent,
} from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { occurrences } from '../cron/occurrences.js';
import { defineFlow } from './define-flow.js';
import { createRuntime, type Runtime } from './flow-runtime.js';

/** Polls `check` every 5 ms; fails after 400 tries (2 s). */
async function eventually(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** An in-memory store whose next `failures` reads of one execution answer as `answer` says. */
function storeWithFaults(clock: ManualClock) {
  const inner = new InMemoryEventStore({ clock });
  const faults = {
    executionId: undefined as string | undefined,
    answer: 'unavailable' as 'unavailable' | 'empty',
    failures: 1,
    injected: 0,
  };
  const store = new Proxy(inner, {
    get(target, property) {
      if (property === 'read') {
        return (executionId: string, options?: object): Promise<StoredEvent[]> => {
          if (executionId !== faults.executionId) return target.read(executionId, options);
          faults.injected++;
          if (faults.injected >= faults.failures) faults.executionId = undefined;
          if (faults.answer === 'empty') return Promise.resolve([]);
          return Promise.reject(
            new LoomError(ErrorCode.STORE_UNAVAILABLE, 'injected: the store is unreachable', {
              executionId,
            }),
          );
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as EventStore;
  return { store, faults };
}

describe('cron schedules and the runtime they fire on', () => {
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.shutdown();
  });

  async function firstRunThenSecondOccurrence(answer: 'unavailable' | 'empty', failures = 1) {
    const clock = new ManualClock();
    const { store, faults } = storeWithFaults(clock);
    const runtime = createRuntime({ store, clock, timerPollMs: 0, inlineWaitMs: 0 });
    runtimes.push(runtime);
    const job = defineFlow({ name: 'job' }, async (ctx) =>
      ctx.step('work', () => new Promise<string>(() => undefined)),
    );
    const scheduleId = await runtime.schedule(job, '* * * * *', { name: 'minutely' });
    const idle = () =>
      eventually(() => !runtime.activeExecutions.includes(scheduleId), 'schedule suspends');
    await idle();
    const [first, second] = occurrences('* * * * *', clock.now(), 'UTC', 2) as [number, number];
    await clock.advance(first - clock.now());
    await runtime.wakeDue();
    await eventually(async () => (await store.read(`cron:minutely:${first}`)).length > 0, 'run 1');
    await idle();
    // The first run still works when the second occurrence comes, and looking it up fails once.
    faults.executionId = `cron:minutely:${first}`;
    faults.answer = answer;
    faults.failures = failures;
    await clock.advance(second - clock.now());
    await runtime.wakeDue();
    await eventually(() => faults.injected === 1, 'the failed lookup');
    return { clock, store, runtime, scheduleId, second, idle, faults };
  }

  function fired(events: StoredEvent[], occurrenceMs: number): unknown {
    const completed = events.find(
      (event) =>
        event.type === 'step.completed' &&
        (event.payload as { name?: string }).name === `fire-${occurrenceMs}`,
    );
    return (completed?.payload as { result?: unknown } | undefined)?.result;
  }

  it('a status lookup that fails is retried on the clock, never taken for completed: no overlapping run', async () => {
    const { clock, store, runtime, scheduleId, second, idle } =
      await firstRunThenSecondOccurrence('unavailable');
    // The retry waits 1 s on the runtime's clock (a durable timer), then finds the first run
    // still running.
    await idle();
    await clock.advance(1_000);
    expect(await runtime.wakeDue()).toEqual([scheduleId]);
    await idle();
    expect(fired(await store.read(scheduleId), second)).toBe(false);
    expect(await store.read(`cron:minutely:${second}`)).toEqual([]);
  });

  it('a lookup that keeps failing skips the occurrence, records why, and the schedule goes on', async () => {
    const { clock, store, runtime, scheduleId, second, idle, faults } =
      await firstRunThenSecondOccurrence('unavailable', 5);
    // Four more attempts, 1 s, 2 s, 4 s and 8 s apart on the runtime's clock: each backoff is a
    // durable timer the timer service wakes.
    for (const backoffMs of [1_000, 2_000, 4_000, 8_000]) {
      await idle();
      await clock.advance(backoffMs);
      expect(await runtime.wakeDue()).toEqual([scheduleId]);
    }
    await idle();
    expect(faults.injected).toBe(5);
    const events = await store.read(scheduleId);
    const failed = events.find(
      (event) =>
        event.type === 'step.failed' &&
        (event.payload as { name?: string }).name === `fire-${second}`,
    );
    expect(failed?.payload).toMatchObject({ attempts: 5, error: { code: 'STORE_UNAVAILABLE' } });
    expect(
      events.filter(
        (event) =>
          event.type === 'step.attempt_failed' &&
          (event.payload as { name?: string }).name === `fire-${second}`,
      ),
    ).toHaveLength(4);
    expect(JSON.stringify(failed?.payload)).toContain('the store is unreachable');
    expect(await store.read(`cron:minutely:${second}`)).toEqual([]);
    // Still scheduled: it sleeps until the next occurrence.
    expect(events.at(-1)?.type).toBe('execution.suspended');
  });

  it('a previous run that is not in the log is not running: the occurrence fires', async () => {
    const { store, scheduleId, second, idle } = await firstRunThenSecondOccurrence('empty');
    await idle();
    expect(fired(await store.read(scheduleId), second)).toBe(true);
    expect((await store.read(`cron:minutely:${second}`)).length).toBeGreaterThan(0);
  });
});
