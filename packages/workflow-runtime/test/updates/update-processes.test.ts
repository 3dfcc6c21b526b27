// An update across real processes, its driver SIGKILLed (ADR 0061): the worker that took the
// update (its receipt durable, its answer not yet) is killed; a fresh worker resumes the
// execution from the log and answers; the caller, in another process, gets the answer once,
// and asking again with the same update id writes nothing and gets the same answer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { processTargets } from '../flow-control/process-harness.js';
import { openTarget } from '../flow-control/tenant-flow.js';
import { addItem, cartFlow, itemCount } from './update-flow.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-update-processes-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

const workerFile = join(import.meta.dirname, 'update-worker.ts');

function startWorker(target: string, mode: 'doomed' | 'fresh') {
  const child = spawnTestProcess(workerFile, { args: [target, mode], name: `${mode} worker` });
  return { child, ready: child.line(/ready/) };
}

for (const [name, make] of processTargets(directory, 'update')) {
  describe(`an update across processes on ${name}`, () => {
    it('the driver SIGKILLed after taking the update: a fresh worker answers it, the caller gets it once', async () => {
      const { target, drop } = make();
      const backend = await openTarget(target);
      try {
        await backend.migrate();
        // The caller: it sends and waits, never drives (no timers, no recovery).
        const caller = createRuntime({
          backend,
          closeBackend: false,
          flows: [cartFlow('caller')],
          timerPollMs: 0,
          recoverEveryMs: 0,
        });
        const doomed = startWorker(target, 'doomed');
        await doomed.ready;
        const holding = doomed.child.line(/holding u-1/);
        let answers = 0;
        const answer = caller
          .update(addItem, 'cart-1', { sku: 'loom-1' }, { updateId: 'u-1', timeout: '45s' })
          .then((result) => {
            answers++;
            return result;
          });
        await holding;
        expect((await doomed.child.kill('SIGKILL')).signal).toBe('SIGKILL');
        expect(answers).toBe(0);
        const types = (await backend.events.read('cart-1')).map((event) => event.type);
        expect(types).toContain('signal.received');
        expect(types).not.toContain('step.completed');
        // Nobody drives it now: a query replays its log here, mid-update.
        expect(await caller.query(itemCount, 'cart-1')).toBe(0);

        const fresh = startWorker(target, 'fresh');
        await fresh.ready;
        const result = await answer;
        expect(result.count).toBe(1);
        expect(result.by).toBe(fresh.child.child.pid);
        expect(answers).toBe(1);
        // Asked again under the same id: the same answer, nothing more written.
        const events = (await backend.events.read('cart-1')).length;
        expect(
          await caller.update(addItem, 'cart-1', { sku: 'other' }, { updateId: 'u-1' }),
        ).toEqual(result);
        expect(await backend.events.readSignals('cart-1')).toHaveLength(1);
        expect((await backend.events.read('cart-1')).length).toBe(events);
        // The caller's process answers a query by replay, though it drives nothing.
        expect(await caller.query(itemCount, 'cart-1')).toBe(1);
        const answered = (await backend.events.read('cart-1')).filter(
          (event) =>
            event.type === 'step.completed' &&
            (event.payload as { name: string }).name === 'loom.update:u-1',
        );
        expect(answered).toHaveLength(1);
        await fresh.child.kill('SIGKILL');
        await caller.shutdown();
      } finally {
        await backend.close();
        await drop();
      }
    });
  });
}
