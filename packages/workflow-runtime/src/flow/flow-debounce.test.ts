// Debounce by key (`defineFlow({ debounce: { key, periodMs, maxWaitMs? } })`, ADR 0059) through
// the runtime: on memory, SQLite and Postgres, bursts of one key enqueued from two runtimes leave
// one queued run that starts once with the last input; once it started, the next enqueue begins
// a new run; bad options and keys are typed errors that write nothing. The crash proof, with
// SIGKILL, is test/flow-control/debounce-processes.test.ts.
import { openMemory } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, refusedOptionPath, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';
import { queueExecutionId } from './queue-worker.js';

const shared = sharedDatabases('flow-debounce');

const ran: Array<{ doc: string; n: number }> = [];
const reindex = defineFlow(
  {
    name: 'reindex-doc',
    debounce: { key: (input: { doc: string; n: number }) => input.doc, periodMs: 50 },
  },
  async (ctx, input) =>
    ctx.step('reindex', async () => {
      ran.push(input);
      return `${input.doc}-${input.n}`;
    }),
);

/** The result of a queued run, once a worker started it. */
async function resultOf(runtime: ReturnType<typeof createRuntime>, execution: string) {
  await until(`${execution} started`, async () =>
    runtime.status(execution).then(
      () => true,
      () => false,
    ),
  );
  return (await runtime.attach(execution)).result();
}

for (const [name, make] of shared) {
  describe(`debounce by key on ${name}`, () => {
    it('a burst of one key from two runtimes runs once with its last input; the next enqueue starts a new run', async () => {
      ran.length = 0;
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      const one = createRuntime({ backend: a, flows: [reindex], timerPollMs: 0 });
      const two = createRuntime({ backend: b, flows: [reindex], timerPollMs: 0 });
      try {
        const answers = [];
        for (let n = 0; n < 8; n++) {
          answers.push(await (n % 2 === 0 ? one : two).enqueue('docs', reindex, { doc: 'd1', n }));
        }
        const runId = answers[0]?.itemId as string;
        expect(answers[0]?.duplicate).toBe(false);
        expect(answers.slice(1)).toEqual(
          answers.slice(1).map(() => ({ itemId: runId, duplicate: true })),
        );
        // Another key is its own debounce.
        const other = await two.enqueue('docs', reindex, { doc: 'd2', n: 0 });
        expect(other.duplicate).toBe(false);
        expect((await a.queues.get('docs', runId))?.input).toEqual({ doc: 'd1', n: 7 });
        const worker = one.work('docs', { pollMs: 5 });
        expect(await resultOf(one, queueExecutionId('docs', runId))).toBe('d1-7');
        await until(
          'both items completed',
          async () =>
            (await a.queues.get('docs', runId))?.status === 'done' &&
            (await a.queues.get('docs', other.itemId))?.status === 'done',
        );
        expect(ran.filter((input) => input.doc === 'd1')).toEqual([{ doc: 'd1', n: 7 }]);
        // The run started: the key's next enqueue begins a new run.
        const next = await two.enqueue('docs', reindex, { doc: 'd1', n: 8 });
        expect(next.duplicate).toBe(false);
        expect(next.itemId).not.toBe(runId);
        expect(await resultOf(two, queueExecutionId('docs', next.itemId))).toBe('d1-8');
        await worker.stop();
      } finally {
        await one.shutdown();
        await two.shutdown();
        if (b !== a) await b.close();
        await a.close();
        await database.drop();
      }
    });
  });
}

describe('debounce by key: options and keys', () => {
  it('refuses bad definitions with INVALID_ARGUMENT naming the option', () => {
    const key = (input: { t: string }) => input.t;
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ debounce: { key, periodMs: 0 } }, 'debounce.periodMs'],
      [{ debounce: { key, periodMs: 1.5 } }, 'debounce.periodMs'],
      [{ debounce: { key } }, 'debounce.periodMs'],
      [{ debounce: { key, periodMs: 100, maxWaitMs: 99 } }, 'debounce.maxWaitMs'],
      [{ debounce: { key: 'input.t', periodMs: 100 } }, 'debounce.key'],
      [{ debounce: 100 }, 'debounce'],
      [{ debounce: { key, periodMs: 100 }, singleton: { key, mode: 'skip' } }, 'debounce'],
      [{ debounce: { key, periodMs: 100 }, idempotency: { key, windowMs: 100 } }, 'debounce'],
      [{ debounce: { key, periodMs: 100 }, trigger: { event: 'doc.changed' } }, 'trigger'],
    ];
    for (const [options, path] of bad)
      expect(refusedOptionPath(options as object), path).toBe(path);
  });

  it('a bad key is INVALID_FLOW_KEY, a dedupeKey beside it INVALID_ARGUMENT; nothing is enqueued', async () => {
    const backend = openMemory();
    const picky = defineFlow(
      {
        name: 'picky',
        debounce: {
          key: (input: { doc?: unknown }) => {
            if (input.doc === 'boom') throw new Error('no doc boom');
            return input.doc as string;
          },
          periodMs: 10,
          maxWaitMs: 100,
        },
      },
      async () => null,
    );
    const runtime = createRuntime({ backend, flows: [picky], timerPollMs: 0 });
    for (const doc of ['boom', '', 7, undefined, 'x'.repeat(200)]) {
      expect(await codeOf(runtime.enqueue('jobs', picky, { doc }))).toBe(
        WorkflowErrorCode.INVALID_FLOW_KEY,
      );
    }
    expect(await codeOf(runtime.enqueue('jobs', picky, { doc: 'a' }, { dedupeKey: 'mine' }))).toBe(
      WorkflowErrorCode.INVALID_ARGUMENT,
    );
    expect((await runtime.queueStats('jobs')).depth).toBe(0);
    expect(await codeOf(runtime.start(picky, { doc: 'a' }, { executionId: 'direct' }))).toBe(
      WorkflowErrorCode.FLOW_CONTROL_NEEDS_QUEUE,
    );
    expect(await backend.events.read('direct')).toEqual([]);
    const { itemId } = await runtime.enqueue('jobs', picky, { doc: 'a' });
    expect((await backend.queues.get('jobs', itemId))?.debounce).toMatchObject({
      key: '5:picky:a',
      deadlineMs: expect.any(Number),
    });
    await runtime.shutdown();
  });
});
