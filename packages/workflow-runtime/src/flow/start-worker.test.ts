// startWorker in process, on a SQLite file (the cross-process behaviour, SIGTERM and SIGKILL, is
// tested through `loom worker` in @loom/view's test/worker-*.test.ts): it runs its queues, its
// drain finishes what it drives or hands it back, and bad options are INVALID_ARGUMENT.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isLoomError } from '@loom/event-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { openSqlite } from '../sqlite.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';
import { startWorker } from './start-worker.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-start-worker-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let gate: Promise<void> = Promise.resolve();
const job = defineFlow({ name: 'job' }, async (ctx, input: { n: number }) => {
  const a = await ctx.step('a', () => input.n);
  await ctx.step('wait', () => gate);
  return ctx.step('b', () => a * 2 + 1);
});

async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (const deadline = Date.now() + 20_000; !(await check()); await pause(10)) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s`);
  }
}

async function seeded(file: string, items: number) {
  const path = join(directory, file);
  const seed = createRuntime({
    backend: openSqlite({ path, migrate: true }),
    flows: [job],
    timerPollMs: 0,
    recoverEveryMs: 0,
  });
  for (let n = 0; n < items; n++) await seed.enqueue('jobs', job, { n }, { itemId: `j${n}` });
  await seed.shutdown();
  return path;
}

describe('startWorker', () => {
  it('runs the items of its queues; drain() with time to spare finishes what it drives', async () => {
    const path = await seeded('finish.db', 6);
    let open!: () => void;
    gate = new Promise((resolve) => {
      open = resolve;
    });
    const worker = await startWorker({
      backend: openSqlite({ path }),
      flows: [job],
      queues: ['jobs'],
      work: { pollMs: 20 },
      drainTimeoutMs: 20_000,
    });
    await until('six running', () => worker.runtime.activeExecutions.length === 6);
    const drained = worker.drain();
    open();
    const report = await drained;
    expect(report).toEqual({ inFlight: 6, finished: 6, handedBack: 0, queueItemsHandedBack: 0 });
    expect(await worker.drain()).toBe(report);

    const reader = createRuntime({ backend: openSqlite({ path }), flows: [job], timerPollMs: 0 });
    expect(await reader.queueStats('jobs')).toMatchObject({ completed: 6, claimed: 0, depth: 0 });
    expect(await reader.attach('queue:jobs:j4').result()).toBe(9);
    await reader.shutdown();
  });

  it('drain() past its deadline hands the executions and their queue claims back', async () => {
    const path = await seeded('handback.db', 4);
    gate = new Promise(() => undefined);
    const worker = await startWorker({
      backend: openSqlite({ path }),
      flows: [job],
      queues: ['jobs'],
      work: { pollMs: 20, claimTtlMs: 600_000 },
      leaseTtlMs: 600_000,
      drainTimeoutMs: 50,
    });
    await until('four running', () => worker.runtime.activeExecutions.length === 4);
    const report = await worker.drain();
    expect(report).toEqual({ inFlight: 4, finished: 0, handedBack: 4, queueItemsHandedBack: 4 });

    // Claims and leases were taken for 10 minutes: only a hand-back lets the next worker in now.
    gate = Promise.resolve();
    const next = await startWorker({
      backend: openSqlite({ path }),
      flows: [job],
      queues: ['jobs'],
      work: { pollMs: 20 },
    });
    await until(
      'all four completed',
      async () => (await next.runtime.queueStats('jobs')).completed === 4,
    );
    expect(await next.runtime.attach('queue:jobs:j3').result()).toBe(7);
    await next.drain();
  });

  it('setup registers flows before the first recovery: a queue item of a flow only setup knows runs from the start', async () => {
    const path = await seeded('setup.db', 2);
    gate = Promise.resolve();
    const registered: string[] = [];
    const worker = await startWorker({
      backend: openSqlite({ path }),
      flows: [],
      setup: (runtime) => {
        runtime.register(job as never);
        registered.push(runtime.nodeId);
      },
      queues: ['jobs'],
      work: { pollMs: 20 },
    });
    expect(registered).toEqual([worker.nodeId]);
    await until(
      'both completed',
      async () => (await worker.runtime.queueStats('jobs')).completed === 2,
    );
    expect(await worker.runtime.attach('queue:jobs:j1').result()).toBe(3);
    await worker.drain();
  });

  it('refuses bad options with INVALID_ARGUMENT', async () => {
    const backend = openSqlite({ path: join(directory, 'bad.db'), migrate: true });
    const refused = async (options: Record<string, unknown>) => {
      const error = await startWorker({ backend, flows: [job], ...options } as never).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(isLoomError(error, WorkflowErrorCode.INVALID_ARGUMENT), JSON.stringify(options)).toBe(
        true,
      );
    };
    await refused({ flows: [] });
    await refused({ queues: [''] });
    await refused({ drainTimeoutMs: -1 });
    await refused({ timerPollMs: 1.5 });
    await backend.close();
  });
});
