// Per-key throttle (`defineFlow({ throttle: { key, limit, periodMs } })`, ADR 0059) through the
// runtime: the item carries the key, limit and period; a worker starts at most `limit` runs of a
// key per window and the rest later (none dropped); bad options and keys are typed errors that
// write nothing. The cross-process proof, with SIGKILL, is
// test/flow-control/throttle-processes.test.ts.
import { isLoomError, Limits, openMemory } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, refusedOptionPath, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';

const job = defineFlow(
  {
    name: 'throttled',
    throttle: { key: (input: { tenant: string }) => input.tenant, limit: 2, periodMs: 60_000 },
  },
  async (_ctx, input: { tenant: string; n: number }) => `${input.tenant}-${input.n}`,
);

describe('per-key throttle through the runtime', () => {
  it('files the item under the key, limit and period; a worker starts limit runs per key per window and keeps the rest', async () => {
    const backend = openMemory();
    const runtime = createRuntime({ backend, flows: [job], timerPollMs: 0 });
    for (let n = 0; n < 3; n++) {
      await runtime.enqueue('jobs', job, { tenant: 'acme', n }, { itemId: `acme-${n}` });
      await runtime.enqueue('jobs', job, { tenant: 'beta', n }, { itemId: `beta-${n}` });
    }
    expect(await backend.queues.get('jobs', 'acme-0')).toMatchObject({
      throttle: { key: 'acme', count: 2, windowMs: 60_000 },
    });
    const worker = runtime.work('jobs', { pollMs: 5 });
    await until(
      'four runs completed',
      async () => (await runtime.queueStats('jobs')).completed === 4,
    );
    // Two per tenant within the minute; the third of each waits in the queue, not dropped.
    expect(await runtime.queueStats('jobs')).toMatchObject({ completed: 4, depth: 2 });
    expect(await runtime.attach('queue:jobs:acme-1').result()).toBe('acme-1');
    expect((await backend.queues.get('jobs', 'acme-2'))?.status).toBe('pending');
    expect((await backend.queues.get('jobs', 'beta-2'))?.status).toBe('pending');
    await worker.stop();
    await runtime.shutdown();
  });

  it('refuses bad definitions with INVALID_ARGUMENT naming the option', () => {
    const key = (input: { t: string }) => input.t;
    const bad: Array<[unknown, string]> = [
      [{ key, limit: 0, periodMs: 1_000 }, 'throttle.limit'],
      [{ key, limit: 1.5, periodMs: 1_000 }, 'throttle.limit'],
      [{ key, periodMs: 1_000 }, 'throttle.limit'],
      [{ key, limit: 1 }, 'throttle.periodMs'],
      [{ key, limit: 1, periodMs: -5 }, 'throttle.periodMs'],
      [{ key, limit: 1, periodMs: Limits.queueThrottleWindowMsMax + 1 }, 'throttle.periodMs'],
      [{ key: 'input.tenant', limit: 1, periodMs: 1_000 }, 'throttle.key'],
      ['1/s', 'throttle'],
    ];
    for (const [throttle, path] of bad)
      expect(refusedOptionPath({ throttle: throttle }), path).toBe(path);
  });

  it('a trigger beside a throttle, singleton or dedupe window is INVALID_ARGUMENT at trigger', () => {
    const key = (input: { t: string }) => input.t;
    for (const control of [
      { throttle: { key, limit: 1, periodMs: 1_000 } },
      { singleton: { key, mode: 'skip' as const } },
      { idempotency: { key, windowMs: 1_000 } },
    ]) {
      let caught: unknown;
      try {
        defineFlow({ name: 'f', trigger: { event: 'ok' }, ...control } as never, async () => null);
      } catch (error) {
        caught = error;
      }
      expect(isLoomError(caught, WorkflowErrorCode.INVALID_ARGUMENT)).toBe(true);
      expect((caught as { fields: { path: string } }).fields.path).toBe('trigger');
    }
  });

  it('a key that throws or is not a non-empty string is INVALID_FLOW_KEY; nothing is enqueued', async () => {
    const backend = openMemory();
    const picky = defineFlow(
      {
        name: 'picky',
        throttle: {
          key: (input: { tenant?: unknown }) => {
            if (input.tenant === 'boom') throw new Error('no tenant boom');
            return input.tenant as string;
          },
          limit: 1,
          periodMs: 1_000,
        },
      },
      async () => null,
    );
    const runtime = createRuntime({ backend, flows: [picky], timerPollMs: 0 });
    for (const tenant of ['boom', '', 7, undefined]) {
      expect(await codeOf(runtime.enqueue('jobs', picky, { tenant }))).toBe(
        WorkflowErrorCode.INVALID_FLOW_KEY,
      );
    }
    expect((await runtime.queueStats('jobs')).depth).toBe(0);
    await runtime.shutdown();
  });

  it('runtime.start of a throttled flow is FLOW_CONTROL_NEEDS_QUEUE and writes nothing', async () => {
    const backend = openMemory();
    const runtime = createRuntime({ backend, flows: [job], timerPollMs: 0 });
    expect(
      await codeOf(runtime.start(job, { tenant: 'acme', n: 0 }, { executionId: 'direct' })),
    ).toBe(WorkflowErrorCode.FLOW_CONTROL_NEEDS_QUEUE);
    expect(await backend.events.read('direct')).toEqual([]);
    await runtime.shutdown();
  });
});
