// Per-key concurrency across real worker processes, two of them SIGKILLed while they run items
// (ADR 0059): no tenant ever has more than its limit of runs in the table the flows record
// themselves in, every item completes once, and the killed workers' slots come back when their
// claims expire (the kill really hit held work: some items were claimed twice).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { processTargets, rows, startWorker, until } from './process-harness.js';
import {
  createTables,
  itemCount,
  openTarget,
  recorderOf,
  tenantFlow,
  tenantLimit,
  tenants,
} from './tenant-flow.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-flowctl-processes-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

for (const [name, make] of processTargets(directory, 'flowctl')) {
  describe(`per-key concurrency across processes on ${name}`, () => {
    it('three workers, two SIGKILLed mid-item: no tenant over its limit, every item completed, the killed workers items claimed again', async () => {
      const { target, drop } = make();
      const backend = await openTarget(target);
      try {
        await backend.migrate();
        await createTables(backend);
        // The test's own runtime only enqueues and reads: no recovery rounds, so every run is
        // driven (and recorded) by the worker processes.
        const flow = tenantFlow(recorderOf(backend));
        const seed = createRuntime({ backend, flows: [flow], timerPollMs: 0, recoverEveryMs: 0 });
        for (let index = 0; index < itemCount; index++) {
          const tenant = tenants[index % tenants.length] as string;
          await seed.enqueue(
            'tenants',
            flow,
            { id: `i-${index}`, tenant },
            { itemId: `i-${index}` },
          );
        }

        const workers = [startWorker(target), startWorker(target), startWorker(target)];
        await Promise.all(workers.map((worker) => worker.ready));
        const done = async () =>
          (await rows<{ n: number | string }>(backend, 'SELECT count(*) AS n FROM flowctl_done'))[0]
            ?.n;
        // Twice, kill a live worker while it holds runs (its rows are in flowctl_running) and
        // start a fresh one in its place.
        for (const after of [8, 24]) {
          await until(`${after} items done`, async () => Number(await done()) >= after);
          let victim: (typeof workers)[number] | undefined;
          await until('a live worker holding a run', async () => {
            const holders = await rows<{ pid: number | string }>(
              backend,
              'SELECT DISTINCT pid FROM flowctl_running',
            );
            const pids = new Set(holders.map((row) => Number(row.pid)));
            victim = workers.find(
              (worker) => !worker.child.exited() && pids.has(Number(worker.child.child.pid)),
            );
            return victim !== undefined;
          });
          const exit = await victim?.child.kill('SIGKILL');
          expect(exit?.signal).toBe('SIGKILL');
          const next = startWorker(target);
          await next.ready;
          workers.push(next);
        }
        await until(
          `all ${itemCount} items completed`,
          async () => (await seed.queueStats('tenants')).completed === itemCount,
          45_000,
        );

        // No tenant was ever seen over its limit, and each reached it (the check could fail).
        const seen = await rows<{ tenant: string; peak: number | string }>(
          backend,
          'SELECT tenant, max(running) AS peak FROM flowctl_seen GROUP BY tenant ORDER BY tenant',
        );
        expect(seen.map((row) => [row.tenant, Number(row.peak)])).toEqual(
          tenants.map((tenant) => [tenant, tenantLimit]),
        );
        // Nothing lost: every item finished its run (exit recorded once per item) and completed.
        const finished = await rows<{ item_id: string }>(
          backend,
          'SELECT item_id FROM flowctl_done ORDER BY item_id',
        );
        const ids = Array.from({ length: itemCount }, (_, index) => `i-${index}`).sort();
        expect(finished.map((row) => row.item_id)).toEqual(ids);
        expect(await rows(backend, 'SELECT item_id FROM flowctl_running')).toEqual([]);
        expect(await seed.queueStats('tenants')).toMatchObject({
          completed: itemCount,
          failed: 0,
          cancelled: 0,
          depth: 0,
        });
        for (const id of ids) {
          expect(await seed.attach(`queue:tenants:${id}`).result()).toBe(id);
        }
        // The kills hit held work: their items were claimed again after the claims expired.
        let reclaimed = 0;
        for (const id of ids) {
          if (((await backend.queues.get('tenants', id))?.attempts ?? 0) > 1) reclaimed += 1;
        }
        expect(reclaimed).toBeGreaterThan(0);
        for (const worker of workers)
          if (!worker.child.exited()) await worker.child.kill('SIGKILL');
        await seed.shutdown();
      } finally {
        await backend.close().catch(() => undefined);
        if (process.env.FLOWCTL_KEEP === undefined) await drop();
      }
    });
  });
}
