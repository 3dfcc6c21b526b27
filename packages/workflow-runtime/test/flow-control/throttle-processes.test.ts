// Per-key throttle across real worker processes, two of them SIGKILLed while they run items
// (ADR 0059): in every sliding window of the throttle's period, no tenant's items were claimed
// more than its limit times (checked against the claim times the store recorded, every claim a
// run reached plus the final ones), every item completes once, and the killed workers' items
// were claimed again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { processTargets, rows, startWorker, until } from './process-harness.js';
import { createTables, openTarget } from './tenant-flow.js';
import {
  createStartsTable,
  throttledFlow,
  throttleItemCount,
  throttleLimit,
  throttlePeriodMs,
  throttleQueue,
  throttleTenants,
} from './throttle-flow.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-throttle-processes-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

/** The most claims of one tenant within any window (t - period, t] ending at one of its claims. */
function peakPerWindow(starts: readonly number[]): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let peak = 0;
  for (let end = 0, begin = 0; end < sorted.length; end++) {
    while ((sorted[begin] as number) <= (sorted[end] as number) - throttlePeriodMs) begin += 1;
    peak = Math.max(peak, end - begin + 1);
  }
  return peak;
}

for (const [name, make] of processTargets(directory, 'throttle')) {
  describe(`per-key throttle across processes on ${name}`, () => {
    it('three workers, two SIGKILLed mid-item: no tenant claimed over its limit in any window, every item completed, killed items claimed again', async () => {
      const { target, drop } = make();
      const backend = await openTarget(target);
      try {
        await backend.migrate();
        await createTables(backend);
        await createStartsTable(backend);
        // The test's own runtime only enqueues and reads: no recovery rounds.
        const flow = throttledFlow(undefined);
        const seed = createRuntime({ backend, flows: [flow], timerPollMs: 0, recoverEveryMs: 0 });
        for (let index = 0; index < throttleItemCount; index++) {
          const tenant = throttleTenants[index % throttleTenants.length] as string;
          await seed.enqueue(
            throttleQueue,
            flow,
            { id: `i-${index}`, tenant },
            { itemId: `i-${index}` },
          );
        }

        const workers = [
          startWorker(target, 'throttle'),
          startWorker(target, 'throttle'),
          startWorker(target, 'throttle'),
        ];
        await Promise.all(workers.map((worker) => worker.ready));
        const done = async () =>
          Number(
            (
              await rows<{ n: number | string }>(backend, 'SELECT count(*) AS n FROM flowctl_done')
            )[0]?.n,
          );
        // Twice, kill a live worker while it holds a run and start a fresh one in its place.
        for (const after of [3, 10]) {
          await until(`${after} items done`, async () => (await done()) >= after);
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
          const next = startWorker(target, 'throttle');
          await next.ready;
          workers.push(next);
        }
        await until(
          `all ${throttleItemCount} items completed`,
          async () => (await seed.queueStats(throttleQueue)).completed === throttleItemCount,
          45_000,
        );

        // Every claim a run reached (flowctl_starts) and every item's last claim (the store).
        const ids = Array.from({ length: throttleItemCount }, (_, index) => `i-${index}`);
        const claims = new Map<string, { tenant: string; startedAtMs: number }>();
        for (const row of await rows<{
          item_id: string;
          tenant: string;
          attempts: number | string;
          started_at_ms: number | string;
        }>(backend, 'SELECT item_id, tenant, attempts, started_at_ms FROM flowctl_starts')) {
          claims.set(`${row.item_id}#${row.attempts}`, {
            tenant: row.tenant,
            startedAtMs: Number(row.started_at_ms),
          });
        }
        let reclaimed = 0;
        for (const [index, id] of ids.entries()) {
          const item = await backend.queues.get(throttleQueue, id);
          if ((item?.attempts ?? 0) > 1) reclaimed += 1;
          claims.set(`${id}#${item?.attempts}`, {
            tenant: throttleTenants[index % throttleTenants.length] as string,
            startedAtMs: item?.startedAtMs as number,
          });
        }
        // No tenant over its limit in any window, and each reached it (the check could fail).
        const peaks = throttleTenants.map((tenant) =>
          peakPerWindow(
            [...claims.values()]
              .filter((claim) => claim.tenant === tenant)
              .map((claim) => claim.startedAtMs),
          ),
        );
        expect(peaks).toEqual(throttleTenants.map(() => throttleLimit));
        // Nothing lost: every item exited once and completed with its own id.
        const finished = await rows<{ item_id: string }>(
          backend,
          'SELECT item_id FROM flowctl_done ORDER BY item_id',
        );
        expect(finished.map((row) => row.item_id)).toEqual([...ids].sort());
        expect(await seed.queueStats(throttleQueue)).toMatchObject({
          completed: throttleItemCount,
          failed: 0,
          cancelled: 0,
          depth: 0,
        });
        for (const id of ids) {
          expect(await seed.attach(`queue:${throttleQueue}:${id}`).result()).toBe(id);
        }
        // The kills hit held work: their items were claimed again after the claims expired.
        expect(reclaimed).toBeGreaterThan(0);
        for (const worker of workers)
          if (!worker.child.exited()) await worker.child.kill('SIGKILL');
        await seed.shutdown();
      } finally {
        await backend.close().catch(() => undefined);
        await drop();
      }
    });
  });
}
