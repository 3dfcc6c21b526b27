// Debounce by key across real processes, a worker SIGKILLed while it holds runs (ADR 0059): two
// publishers (two handles) enqueue bursts of the same tenants; every burst collapses into one
// item, runs exactly once with its last input, and nothing is lost: the killed worker's runs are
// claimed again and finished by the survivor, and bursts enqueued after their key's run started
// begin new items.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { debounceFlow, debounceQueue } from './debounce-flow.js';
import { processTargets, rows, startWorker, until } from './process-harness.js';
import { createTables, openTarget } from './tenant-flow.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-debounce-processes-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

const keys = ['k0', 'k1', 'k2', 'k3'];
const bursts = 3;
const burstLength = 6;

for (const [name, make] of processTargets(directory, 'debounce')) {
  describe(`debounce by key across processes on ${name}`, () => {
    it('bursts of the same keys from two publishers each run once with their last input, a worker SIGKILLed mid-way', async () => {
      const { target, drop } = make();
      const backend = await openTarget(target);
      const peer = await openTarget(target);
      try {
        await backend.migrate();
        await createTables(backend);
        const flow = debounceFlow(undefined);
        const publishers = [backend, peer].map((b) =>
          createRuntime({ backend: b, flows: [flow], timerPollMs: 0, recoverEveryMs: 0 }),
        );
        // One burst of a key: enqueues alternating between the publishers, in order, so the last
        // input is known; every answer names one item. Returns it once a worker claimed it (a
        // later burst then begins a new item, as it must).
        const burst = async (key: string, b: number) => {
          const answers = [];
          for (let n = 0; n < burstLength; n++) {
            const publisher = publishers[n % 2] as (typeof publishers)[number];
            answers.push(
              await publisher.enqueue(debounceQueue, flow, {
                id: `${key}-b${b}-n${n}`,
                tenant: key,
              }),
            );
          }
          const itemId = answers[0]?.itemId as string;
          expect(answers[0]?.duplicate).toBe(false);
          expect(answers.slice(1)).toEqual(
            answers.slice(1).map(() => ({ itemId, duplicate: true })),
          );
          await until(
            `burst ${b} of ${key} claimed`,
            async () => (await backend.queues.get(debounceQueue, itemId))?.status !== 'pending',
          );
          return itemId;
        };
        const items: string[] = [];

        const doomed = startWorker(target, 'debounce');
        await doomed.ready;
        items.push(...(await Promise.all(keys.map((key) => burst(key, 0)))));
        await until('the doomed worker holds runs', async () => {
          const held = await rows<{ pid: number | string }>(
            backend,
            'SELECT pid FROM flowctl_running',
          );
          return held.some((row) => Number(row.pid) === doomed.child.child.pid);
        });
        expect((await doomed.child.kill('SIGKILL')).signal).toBe('SIGKILL');
        const survivor = startWorker(target, 'debounce');
        await survivor.ready;
        for (let b = 1; b < bursts; b++) {
          items.push(...(await Promise.all(keys.map((key) => burst(key, b)))));
        }
        expect(new Set(items).size).toBe(keys.length * bursts);
        await until('every burst finished', async () => {
          const stats = await publishers[0]?.queueStats(debounceQueue);
          return stats?.completed === keys.length * bursts && stats.depth === 0;
        });

        // Each burst ran, exactly with its last input; no other input ever entered a run.
        const last = keys.flatMap((key) =>
          Array.from({ length: bursts }, (_, b) => `${key}-b${b}-n${burstLength - 1}`),
        );
        const entered = await rows<{ item_id: string }>(
          backend,
          'SELECT DISTINCT item_id FROM flowctl_seen ORDER BY item_id',
        );
        expect(entered.map((row) => row.item_id)).toEqual([...last].sort());
        const done = await rows<{ item_id: string }>(
          backend,
          'SELECT item_id FROM flowctl_done ORDER BY item_id',
        );
        expect(done.map((row) => row.item_id)).toEqual([...last].sort());
        // The kill hit held work: those items were claimed again and still ran once.
        const attempts = await Promise.all(
          items.map(async (itemId) => (await backend.queues.get(debounceQueue, itemId))?.attempts),
        );
        expect(attempts.some((count) => (count ?? 0) > 1)).toBe(true);
        await survivor.child.kill('SIGKILL');
        for (const publisher of publishers) await publisher.shutdown();
      } finally {
        await peer.close().catch(() => undefined);
        await backend.close().catch(() => undefined);
        await drop();
      }
    }, 60_000);
  });
}
