// Singleton by key (`defineFlow({ singleton: { key, mode: 'skip' } })`, ADR 0059) through the
// runtime: on memory, SQLite and Postgres, enqueues of one key racing from two runtimes leave one
// unfinished run and answer it to every caller; the key is free again once the run ends; bad
// options and keys are typed errors that write nothing. The crash proof, with SIGKILL, is
// test/flow-control/singleton-processes.test.ts.
import { openMemory } from '@loom/event-runtime';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { codeOf, refusedOptionPath, sharedDatabases, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime } from './flow-runtime.js';
import { queueExecutionId } from './queue-worker.js';

const shared = sharedDatabases('flow-singleton');

// The run waits in its step until the test opens the gate (one process: a shared promise).
let openGate: () => void = () => {};
let gate = Promise.resolve();
function closeGate(): void {
  gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
}

const refresh = defineFlow(
  {
    name: 'refresh-account',
    singleton: { key: (input: { account: string; n: number }) => input.account, mode: 'skip' },
  },
  async (ctx, input) =>
    ctx.step('refresh', async () => {
      await gate;
      return `${input.account}-${input.n}`;
    }),
);

for (const [name, make] of shared) {
  describe(`singleton by key on ${name}`, () => {
    it('racing enqueues of one key from two runtimes leave one run and answer it; the key frees when it ends', async () => {
      closeGate();
      const database = await make();
      const [a, b] = [await database.open(), await database.open()];
      const one = createRuntime({ backend: a, flows: [refresh], timerPollMs: 0 });
      const two = createRuntime({ backend: b, flows: [refresh], timerPollMs: 0 });
      try {
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, n) =>
            (n % 2 === 0 ? one : two).enqueue('accounts', refresh, { account: 'acme', n }),
          ),
        );
        const first = answers.filter((answer) => !answer.duplicate);
        expect(first).toHaveLength(1);
        const runId = first[0]?.itemId as string;
        expect(new Set(answers.map((answer) => answer.itemId))).toEqual(new Set([runId]));
        // Another key is its own singleton.
        expect(
          (await two.enqueue('accounts', refresh, { account: 'globex', n: 0 })).duplicate,
        ).toBe(false);
        // While it runs, a start is skipped and answered with the running one.
        const worker = one.work('accounts', { pollMs: 5 });
        const execution = queueExecutionId('accounts', runId);
        await until('the acme run started', async () =>
          one.status(execution).then(
            () => true,
            () => false,
          ),
        );
        expect(await two.enqueue('accounts', refresh, { account: 'acme', n: 9 })).toEqual({
          itemId: runId,
          duplicate: true,
        });
        const acmeRun = await one.attach(execution);
        openGate();
        const ran = await acmeRun.result();
        expect(ran).toMatch(/^acme-\d$/);
        await until(
          'the acme item completed',
          async () => (await a.queues.get('accounts', runId))?.status === 'done',
        );
        // The run ended: the key is free, the next enqueue starts a new run.
        const next = await two.enqueue('accounts', refresh, { account: 'acme', n: 10 });
        expect(next.duplicate).toBe(false);
        expect(next.itemId).not.toBe(runId);
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

describe('singleton by key: options and keys', () => {
  it('refuses bad definitions with INVALID_ARGUMENT naming the option', () => {
    const key = (input: { t: string }) => input.t;
    const bad: Array<[unknown, string]> = [
      [{ key, mode: 'replace' }, 'singleton.mode'],
      [{ key }, 'singleton.mode'],
      [{ key: 'input.t', mode: 'skip' }, 'singleton.key'],
      [true, 'singleton'],
    ];
    for (const [singleton, path] of bad)
      expect(refusedOptionPath({ singleton: singleton }), path).toBe(path);
  });

  it('a bad key is INVALID_FLOW_KEY, a dedupeKey beside it INVALID_ARGUMENT; nothing is enqueued', async () => {
    const backend = openMemory();
    const picky = defineFlow(
      {
        name: 'picky',
        singleton: {
          key: (input: { account?: unknown }) => {
            if (input.account === 'boom') throw new Error('no account boom');
            return input.account as string;
          },
          mode: 'skip',
        },
      },
      async () => null,
    );
    const runtime = createRuntime({ backend, flows: [picky], timerPollMs: 0 });
    for (const account of ['boom', '', 7, undefined, 'x'.repeat(200)]) {
      expect(await codeOf(runtime.enqueue('jobs', picky, { account }))).toBe(
        WorkflowErrorCode.INVALID_FLOW_KEY,
      );
    }
    expect(
      await codeOf(runtime.enqueue('jobs', picky, { account: 'a' }, { dedupeKey: 'mine' })),
    ).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
    expect((await runtime.queueStats('jobs')).depth).toBe(0);
    expect(await codeOf(runtime.start(picky, { account: 'a' }, { executionId: 'direct' }))).toBe(
      WorkflowErrorCode.FLOW_CONTROL_NEEDS_QUEUE,
    );
    expect(await backend.events.read('direct')).toEqual([]);
    await runtime.shutdown();
  });
});
