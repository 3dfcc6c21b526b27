import { describe, expect, it, vi } from 'vitest';
import { isLoomError, type LoomError } from './errors.js';
import { ConcurrencyProbe, type Deferred, deferred, settle } from './internal/test-helpers.js';
import type { ScheduleTaskOptions } from './schedule.js';
import { createScheduler, type Scheduler } from './scheduler.js';

/** Schedules a task that records its name when it starts and finishes when the test says so. */
function gated(
  scheduler: Scheduler,
  name: string,
  log: string[],
  options?: ScheduleTaskOptions,
): { gate: Deferred<void>; result: Promise<string> } {
  const gate = deferred();
  const result = scheduler.schedule(async () => {
    log.push(name);
    await gate.promise;
    return name;
  }, options);
  return { gate, result };
}

/** Runs every queued task to completion, one start at a time, releasing each as it starts. */
async function runAll(gates: Deferred<void>[]): Promise<void> {
  for (const gate of gates) gate.resolve();
  await settle();
}

describe('createScheduler: concurrency cap', () => {
  it.each([1, 3, 8])('never runs more than concurrencyMax = %i at once', async (concurrencyMax) => {
    const scheduler = createScheduler({ concurrencyMax });
    const probe = new ConcurrencyProbe();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        scheduler.schedule(async () => {
          probe.enter();
          for (let turn = 0; turn < (i % 4) + 1; turn++) await settle();
          probe.leave();
          return i;
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(probe.maxActive).toBe(concurrencyMax);
    expect(probe.started).toBe(40);
    expect(scheduler.running).toBe(0);
    expect(scheduler.waiting).toBe(0);
  });

  it('counts running and waiting, and idle() resolves once both are zero', async () => {
    const scheduler = createScheduler({ concurrencyMax: 2 });
    await scheduler.idle();
    const log: string[] = [];
    const tasks = ['a', 'b', 'c', 'd'].map((name) => gated(scheduler, name, log));
    expect(scheduler.running).toBe(2);
    expect(scheduler.waiting).toBe(2);
    let idle = 0;
    void scheduler.idle().then(() => idle++);
    tasks[0]?.gate.resolve();
    await settle();
    expect([scheduler.running, scheduler.waiting, idle]).toEqual([2, 1, 0]);
    await runAll(tasks.map((t) => t.gate));
    await settle();
    expect([scheduler.running, scheduler.waiting, idle]).toEqual([0, 0, 1]);
    expect(log).toEqual(['a', 'b', 'c', 'd']);
  });

  it('without a cap every task starts at once and is still counted', async () => {
    const scheduler = createScheduler();
    expect(scheduler.concurrencyMax).toBe(Number.POSITIVE_INFINITY);
    const log: string[] = [];
    const tasks = Array.from({ length: 100 }, (_, i) => gated(scheduler, `t${i}`, log));
    expect(log).toHaveLength(100);
    expect(scheduler.running).toBe(100);
    expect(scheduler.waiting).toBe(0);
    await runAll(tasks.map((t) => t.gate));
    expect(scheduler.running).toBe(0);
  });

  it('a failing task frees its slot for the next one', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const failing = scheduler.schedule(async () => {
      throw new Error('boom');
    });
    const syncThrow = scheduler.schedule(() => {
      throw new Error('sync boom');
    });
    const next = scheduler.schedule(async () => 'ran');
    await expect(failing).rejects.toThrow('boom');
    await expect(syncThrow).rejects.toThrow('sync boom');
    await expect(next).resolves.toBe('ran');
    expect(scheduler.running).toBe(0);
  });

  it('a task scheduled from inside a running task queues behind those already waiting', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const log: string[] = [];
    const gate = deferred();
    const first = scheduler.schedule(async () => {
      log.push('first');
      await gate.promise;
      void scheduler.schedule(async () => {
        log.push('nested');
      });
    });
    const second = scheduler.schedule(async () => {
      log.push('second');
    });
    expect(scheduler.waiting).toBe(1);
    gate.resolve();
    await Promise.all([first, second]);
    await scheduler.idle();
    expect(log).toEqual(['first', 'second', 'nested']);
  });
});

describe('createScheduler: priority and fairness', () => {
  it('starts waiting tasks by strict priority, FIFO within one priority', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const log: string[] = [];
    const tasks = [
      gated(scheduler, 'blocker', log),
      gated(scheduler, 'low-1', log, { priority: 'low' }),
      gated(scheduler, 'normal-1', log),
      gated(scheduler, 'high-1', log, { priority: 'high' }),
      gated(scheduler, 'normal-2', log, { priority: 'normal' }),
      gated(scheduler, 'high-2', log, { priority: 'high' }),
      gated(scheduler, 'low-2', log, { priority: 'low' }),
    ];
    for (const task of tasks) {
      task.gate.resolve();
      await settle();
    }
    expect(log).toEqual(['blocker', 'high-1', 'high-2', 'normal-1', 'normal-2', 'low-1', 'low-2']);
  });

  it('serves keys round-robin, so a busy key cannot starve a quiet one', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const log: string[] = [];
    const tasks = [gated(scheduler, 'blocker', log)];
    for (let i = 1; i <= 20; i++) tasks.push(gated(scheduler, `busy-${i}`, log, { key: 'busy' }));
    tasks.push(gated(scheduler, 'quiet-1', log, { key: 'quiet' }));
    tasks.push(gated(scheduler, 'quiet-2', log, { key: 'quiet' }));
    tasks.push(gated(scheduler, 'other-1', log, { key: 'other' }));
    for (const task of tasks) {
      task.gate.resolve();
      await settle();
    }
    // Without fairness quiet-1 would start 22nd; with it, within the first round.
    expect(log.slice(0, 8)).toEqual([
      'blocker',
      'busy-1',
      'quiet-1',
      'other-1',
      'busy-2',
      'quiet-2',
      'busy-3',
      'busy-4',
    ]);
    expect(log).toHaveLength(24);
  });

  it('a higher priority still comes first across keys', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const log: string[] = [];
    const tasks = [
      gated(scheduler, 'blocker', log),
      gated(scheduler, 'a-normal', log, { key: 'a' }),
      gated(scheduler, 'b-low', log, { key: 'b', priority: 'low' }),
      gated(scheduler, 'c-high', log, { key: 'c', priority: 'high' }),
    ];
    for (const task of tasks) {
      task.gate.resolve();
      await settle();
    }
    expect(log).toEqual(['blocker', 'c-high', 'a-normal', 'b-low']);
  });
});

describe('createScheduler: abort', () => {
  it('a signal aborted before schedule rejects with SCHEDULE_ABORTED and nothing is queued', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const controller = new AbortController();
    controller.abort('gone');
    let ran = 0;
    const error = await scheduler
      .schedule(
        async () => {
          ran++;
        },
        { signal: controller.signal },
      )
      .catch((e: unknown) => e as LoomError);
    expect(ran).toBe(0);
    expect(isLoomError(error, 'SCHEDULE_ABORTED')).toBe(true);
    expect((error as LoomError).cause).toBe('gone');
    expect(scheduler.running + scheduler.waiting).toBe(0);
  });

  it('aborting a waiting task removes it, rejects it, and it never runs', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const log: string[] = [];
    const controller = new AbortController();
    const blocker = gated(scheduler, 'blocker', log);
    const doomed = gated(scheduler, 'doomed', log, { signal: controller.signal, key: 'k' });
    const after = gated(scheduler, 'after', log);
    expect(scheduler.waiting).toBe(2);
    const reason = new Error('cancelled by user');
    controller.abort(reason);
    expect(scheduler.waiting).toBe(1);
    const error = await doomed.result.catch((e: unknown) => e as LoomError);
    expect(isLoomError(error, 'SCHEDULE_ABORTED')).toBe(true);
    expect((error as LoomError).cause).toBe(reason);
    expect((error as LoomError).fields).toMatchObject({ key: 'k', priority: 'normal' });
    blocker.gate.resolve();
    after.gate.resolve();
    await settle();
    expect(log).toEqual(['blocker', 'after']);
    expect(scheduler.running + scheduler.waiting).toBe(0);
  });

  it('aborting the last waiting task resolves idle() once the rest finish', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const controller = new AbortController();
    const blocker = gated(scheduler, 'blocker', []);
    const doomed = gated(scheduler, 'doomed', [], { signal: controller.signal });
    doomed.result.catch(() => {});
    let idle = 0;
    void scheduler.idle().then(() => idle++);
    controller.abort();
    await settle();
    expect(idle).toBe(0);
    blocker.gate.resolve();
    await settle();
    expect(idle).toBe(1);
  });

  it('a running task sees its signal abort; the scheduler does not reject it for it', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const controller = new AbortController();
    let sawAbort = 0;
    const running = scheduler.schedule(
      (signal) =>
        new Promise<string>((resolve) => {
          signal.addEventListener('abort', () => {
            sawAbort++;
            resolve('wound down');
          });
        }),
      { signal: controller.signal },
    );
    expect(scheduler.running).toBe(1);
    controller.abort();
    await expect(running).resolves.toBe('wound down');
    expect(sawAbort).toBe(1);
    expect(scheduler.running).toBe(0);
  });

  it('a task that starts stops listening on the caller signal (no leak on long-lived signals)', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const controller = new AbortController();
    const add = vi.spyOn(controller.signal, 'addEventListener');
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    const blocker = gated(scheduler, 'blocker', []);
    const tasks = Array.from({ length: 5 }, (_, i) =>
      gated(scheduler, `t${i}`, [], { signal: controller.signal }),
    );
    await runAll([blocker.gate, ...tasks.map((t) => t.gate)]);
    for (const task of tasks) await task.result;
    expect(add).toHaveBeenCalledTimes(5);
    expect(remove).toHaveBeenCalledTimes(5);
  });
});

describe('createScheduler: queue depth', () => {
  it('rejects with SCHEDULER_QUEUE_FULL beyond queueDepthMax and accepts again once room frees', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1, queueDepthMax: 2 });
    const controller = new AbortController();
    const log: string[] = [];
    const running = gated(scheduler, 'running', log);
    const waiting1 = gated(scheduler, 'waiting-1', log, { signal: controller.signal });
    const waiting2 = gated(scheduler, 'waiting-2', log);
    let refusedRan = 0;
    const error = await scheduler
      .schedule(
        async () => {
          refusedRan++;
        },
        { key: 'tenant-9', priority: 'high' },
      )
      .catch((e: unknown) => e as LoomError);
    expect(isLoomError(error, 'SCHEDULER_QUEUE_FULL')).toBe(true);
    expect((error as LoomError).fields).toMatchObject({
      limit: 'queueDepthMax',
      queueDepthMax: 2,
      waiting: 2,
      running: 1,
      key: 'tenant-9',
      priority: 'high',
    });
    expect(refusedRan).toBe(0);

    waiting1.result.catch(() => {});
    controller.abort();
    const admitted = gated(scheduler, 'admitted', log);
    expect(scheduler.waiting).toBe(2);
    await runAll([running.gate, waiting2.gate, admitted.gate]);
    expect(log).toEqual(['running', 'waiting-2', 'admitted']);
  });

  it('queueDepthMax 0 allows no waiting at all', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1, queueDepthMax: 0 });
    const running = gated(scheduler, 'running', []);
    const error = await scheduler.schedule(async () => {}).catch((e: unknown) => e);
    expect(isLoomError(error, 'SCHEDULER_QUEUE_FULL')).toBe(true);
    running.gate.resolve();
    await running.result;
  });

  it('defaults to queueDepthMax 100,000', () => {
    expect(createScheduler({ concurrencyMax: 1 }).queueDepthMax).toBe(100_000);
  });
});

describe('createScheduler: bad input', () => {
  it.each([
    ['concurrencyMax', { concurrencyMax: 0 }],
    ['concurrencyMax', { concurrencyMax: -1 }],
    ['concurrencyMax', { concurrencyMax: Number.NaN }],
    ['concurrencyMax', { concurrencyMax: 1.5 }],
    ['concurrencyMax', { concurrencyMax: '4' }],
    ['queueDepthMax', { queueDepthMax: -1 }],
    ['queueDepthMax', { queueDepthMax: Number.NaN }],
    ['queueDepthMax', { queueDepthMax: Number.POSITIVE_INFINITY }],
    ['options', null],
  ])('%s in %o throws INVALID_ARGUMENT', (argument, options) => {
    let thrown: unknown;
    try {
      createScheduler(options as never);
    } catch (error) {
      thrown = error;
    }
    expect(isLoomError(thrown, 'INVALID_ARGUMENT')).toBe(true);
    expect((thrown as LoomError).fields.argument).toBe(argument);
  });

  it('schedule rejects a non-function or a bad option with INVALID_ARGUMENT and queues nothing', async () => {
    const scheduler = createScheduler({ concurrencyMax: 1 });
    const running = gated(scheduler, 'running', []);
    for (const [task, options] of [
      [undefined, undefined],
      [Promise.resolve(), undefined],
      [async () => {}, { priority: 'HIGH' }],
      [async () => {}, { key: {} }],
    ] as const) {
      const error = await scheduler.schedule(task as never, options as never).catch((e) => e);
      expect(isLoomError(error, 'INVALID_ARGUMENT')).toBe(true);
    }
    expect(scheduler.waiting).toBe(0);
    running.gate.resolve();
    await running.result;
  });

  it('schedule works when detached from its scheduler', async () => {
    const { schedule } = createScheduler({ concurrencyMax: 2 });
    await expect(schedule(async () => 'ok')).resolves.toBe('ok');
  });
});
