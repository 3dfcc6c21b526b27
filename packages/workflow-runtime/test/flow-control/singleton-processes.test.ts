// Singleton by key across real processes, the worker holding the run SIGKILLed (ADR 0059): while
// the killed worker's run is unfinished, enqueues of its key from two handles start nothing and
// answer that run; a fresh worker finishes it (claimed again, recorded once, never two runs of
// the key in flight); then the key is free and the next enqueue starts a new run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { processTargets, rows, startWorker, until } from './process-harness.js';
import { singletonFlow, singletonQueue } from './singleton-flow.js';
import { createTables, openTarget } from './tenant-flow.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-singleton-processes-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

for (const [name, make] of processTargets(directory, 'singleton')) {
  describe(`singleton by key across processes on ${name}`, () => {
    it('the worker holding the run SIGKILLed: enqueues answer that run, a fresh worker finishes it once, then the key is free', async () => {
      const { target, drop } = make();
      const backend = await openTarget(target);
      const peer = await openTarget(target);
      try {
        await backend.migrate();
        await createTables(backend);
        const flow = singletonFlow(undefined);
        const seed = createRuntime({ backend, flows: [flow], timerPollMs: 0, recoverEveryMs: 0 });
        const other = createRuntime({
          backend: peer,
          flows: [flow],
          timerPollMs: 0,
          recoverEveryMs: 0,
        });
        const first = await seed.enqueue(singletonQueue, flow, { id: 'r-0', tenant: 'acme' });
        expect(first.duplicate).toBe(false);

        const doomed = startWorker(target, 'singleton');
        await doomed.ready;
        await until('the worker holds the acme run', async () => {
          const held = await rows<{ pid: number | string }>(
            backend,
            'SELECT pid FROM flowctl_running',
          );
          return held.some((row) => Number(row.pid) === doomed.child.child.pid);
        });
        expect((await doomed.child.kill('SIGKILL')).signal).toBe('SIGKILL');

        // The run is unfinished (its worker is dead): every enqueue of acme answers it.
        const answers = await Promise.all(
          Array.from({ length: 6 }, (_, n) =>
            (n % 2 === 0 ? seed : other).enqueue(singletonQueue, flow, {
              id: `r-${n + 1}`,
              tenant: 'acme',
            }),
          ),
        );
        expect(answers).toEqual(answers.map(() => ({ itemId: first.itemId, duplicate: true })));

        const fresh = startWorker(target, 'singleton');
        await fresh.ready;
        await until(
          'the killed run finished on the fresh worker',
          async () => (await backend.queues.get(singletonQueue, first.itemId))?.status === 'done',
        );
        const item = await backend.queues.get(singletonQueue, first.itemId);
        expect(item).toMatchObject({ outcome: 'completed' });
        expect(item?.attempts).toBeGreaterThan(1); // the kill hit held work: claimed again
        expect(await seed.attach(`queue:${singletonQueue}:${first.itemId}`).result()).toBe('r-0');

        // The key is free: the next enqueue starts a new run, which also finishes.
        const next = await other.enqueue(singletonQueue, flow, { id: 'r-9', tenant: 'acme' });
        expect(next.duplicate).toBe(false);
        await until(
          'the next acme run finished',
          async () => (await backend.queues.get(singletonQueue, next.itemId))?.status === 'done',
        );
        // Never two acme runs in flight, each run exited once, nothing else ran.
        const seen = await rows<{ peak: number | string }>(
          backend,
          'SELECT max(running) AS peak FROM flowctl_seen',
        );
        expect(Number(seen[0]?.peak)).toBe(1);
        const done = await rows<{ item_id: string }>(
          backend,
          'SELECT item_id FROM flowctl_done ORDER BY item_id',
        );
        expect(done.map((row) => row.item_id)).toEqual(['r-0', 'r-9']);
        expect(await seed.queueStats(singletonQueue)).toMatchObject({ completed: 2, depth: 0 });
        await fresh.child.kill('SIGKILL');
        await seed.shutdown();
        await other.shutdown();
      } finally {
        await peer.close().catch(() => undefined);
        await backend.close().catch(() => undefined);
        await drop();
      }
    });
  });
}
