// Singleton `mode: 'cancel'` across real processes, the worker holding the older run SIGKILLed
// (ADR 0059): a newer start of the key cancels the dead worker's run (its reason names the newer
// item), a fresh worker finishes the old item as cancelled and only then runs the newer one; the
// newer run is not lost and the two never run at once. And the double failure: the enqueuer
// SIGKILLed between writing the newer item and cancelling the older run, whose worker was
// SIGKILLed too, the older run resumed by recovery elsewhere while a worker of the later release
// claims the newer item: the older run is cancelled before the newer starts and never finishes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { processTargets, rows, startWorker, until } from './process-harness.js';
import { cancelQueue, cancelSingletonFlow } from './singleton-flow.js';
import { createTables, openTarget } from './tenant-flow.js';

const releaseWorker = join(import.meta.dirname, 'cancel-release-worker.ts');

/** A process of cancel-release-worker.ts in `mode`. */
function releaseProcess(target: string, mode: string, ...args: string[]) {
  return spawnTestProcess(releaseWorker, { args: [target, mode, ...args], name: mode });
}

const directory = mkdtempSync(join(tmpdir(), 'loom-singleton-cancel-processes-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

for (const [name, make] of processTargets(directory, 'sgcancel')) {
  describe(`singleton mode 'cancel' across processes on ${name}`, () => {
    it('the worker holding the older run SIGKILLed: the newer start cancels it, a fresh worker finishes it cancelled, then runs the newer once', async () => {
      const { target, drop } = make();
      const backend = await openTarget(target);
      try {
        await backend.migrate();
        await createTables(backend);
        const flow = cancelSingletonFlow(undefined);
        const client = createRuntime({ backend, flows: [flow], timerPollMs: 0, recoverEveryMs: 0 });
        const older = await client.enqueue(cancelQueue, flow, { id: 'r-0', tenant: 'acme' });

        const doomed = startWorker(target, 'cancel');
        await doomed.ready;
        await until('the worker holds the older run', async () => {
          const held = await rows<{ pid: number | string }>(
            backend,
            'SELECT pid FROM flowctl_running',
          );
          return held.some((row) => Number(row.pid) === doomed.child.child.pid);
        });
        expect((await doomed.child.kill('SIGKILL')).signal).toBe('SIGKILL');

        // The newer start, while the older item is still claimed by the dead worker.
        const newer = await client.enqueue(cancelQueue, flow, { id: 'r-1', tenant: 'acme' });
        expect(newer.duplicate).toBe(false);
        const olderRun = `queue:${cancelQueue}:${older.itemId}`;
        const cancelled = (await backend.events.read(olderRun)).find(
          (event) => event.type === 'execution.cancelled',
        );
        expect((cancelled?.payload as { reason?: string } | undefined)?.reason).toContain(
          newer.itemId,
        );

        const fresh = startWorker(target, 'cancel');
        await fresh.ready;
        await until(
          'the newer run finished on the fresh worker',
          async () => (await backend.queues.get(cancelQueue, newer.itemId))?.status === 'done',
        );
        const olderItem = await backend.queues.get(cancelQueue, older.itemId);
        const newerItem = await backend.queues.get(cancelQueue, newer.itemId);
        expect(olderItem).toMatchObject({ status: 'done', outcome: 'cancelled' });
        expect(newerItem).toMatchObject({ outcome: 'completed', attempts: 1 });
        // Never two runs of the key at once: the older run had ended (cancelled by the newer
        // start) before the newer run began. Not compared: the older item's completedAtMs with
        // the newer's startedAtMs. A claim held by a dead worker stops counting against the
        // partition's limit when it expires (or the key would stay blocked), so the fresh worker
        // may claim the newer item before it re-claims and completes the older one (seen once on
        // Postgres: the newer claimed 42 ms before the older item was completed).
        const olderEnd = (await backend.events.read(olderRun)).at(-1);
        const [newerStart] = await backend.events.read(`queue:${cancelQueue}:${newer.itemId}`, {
          limit: 1,
        });
        expect(olderEnd?.type).toBe('execution.cancelled');
        expect(olderEnd?.at).toBeLessThanOrEqual(newerStart?.at as number);
        expect(await client.attach(`queue:${cancelQueue}:${newer.itemId}`).result()).toBe('r-1');
        // Only the newer run finished; the older never ran its exit step.
        const done = await rows<{ item_id: string }>(
          backend,
          'SELECT item_id FROM flowctl_done ORDER BY item_id',
        );
        expect(done.map((row) => row.item_id)).toEqual(['r-1']);
        await fresh.child.kill('SIGKILL');
        await client.shutdown();
      } finally {
        await backend.close().catch(() => undefined);
        await drop();
      }
    });

    it('the enqueuer SIGKILLed before its cancel, the older worker SIGKILLed too, recovery resuming the older run: it is cancelled before the newer starts, and never finishes', async () => {
      const { target, drop } = make();
      const backend = await openTarget(target);
      const started: Array<{ child: { kill(signal: NodeJS.Signals): Promise<unknown> } }> = [];
      try {
        await backend.migrate();
        await createTables(backend);
        const flow = cancelSingletonFlow(undefined);
        const client = createRuntime({ backend, flows: [flow], timerPollMs: 0, recoverEveryMs: 0 });
        // The older run's work outlasts the later-release worker's start-up on a loaded box: with
        // the 1.5 s default, the recovering node could finish the older run before that worker
        // claimed the newer item (no overlap, nothing to cancel: the benign order ADR 0059
        // allows), and the race this test is about would not happen.
        const older = await client.enqueue(cancelQueue, flow, {
          id: 'r-0',
          tenant: 'acme',
          workMs: 30_000,
        });
        const olderRun = `queue:${cancelQueue}:${older.itemId}`;

        const doomed = startWorker(target, 'cancel');
        await doomed.ready;
        await until('the worker holds the older run', async () => {
          const held = await rows<{ pid: number | string }>(
            backend,
            'SELECT pid FROM flowctl_running',
          );
          return held.some((row) => Number(row.pid) === doomed.child.child.pid);
        });
        expect((await doomed.child.kill('SIGKILL')).signal).toBe('SIGKILL');

        // The newer start, from a process of the later release killed after its insert, before
        // its cancel: the older run is left running, its item claimed by a dead worker.
        const enqueuer = releaseProcess(target, 'enqueue-newer', 'r-1');
        await enqueuer.line(/written r-1/);
        expect((await enqueuer.kill('SIGKILL')).signal).toBe('SIGKILL');
        const olderLog = await backend.events.read(olderRun);
        expect(olderLog.some((event) => event.type === 'execution.cancelled')).toBe(false);

        // A node of the earlier release resumes the older run by recovery (no queue worker)...
        const recoverer = releaseProcess(target, 'recover');
        started.push({ child: recoverer });
        await recoverer.line(new RegExp(`recovered ${olderRun}`));
        // ...while a worker of the later release, which cannot claim the older item, claims the
        // newer one (the older claim expired and no longer holds the key).
        const fresh = releaseProcess(target, 'work-v2');
        started.push({ child: fresh });
        await until(
          'the newer run finished',
          async () => (await backend.queues.get(cancelQueue, 'r-1'))?.status === 'done',
        );
        const olderEnd = (await backend.events.read(olderRun)).at(-1);
        const [newerStart] = await backend.events.read(`queue:${cancelQueue}:r-1`, { limit: 1 });
        expect(olderEnd?.type).toBe('execution.cancelled');
        expect((olderEnd?.payload as { reason?: string } | undefined)?.reason).toContain('r-1');
        expect(olderEnd?.at).toBeLessThanOrEqual(newerStart?.at as number);
        expect(await client.attach(`queue:${cancelQueue}:r-1`).result()).toBe('r-1');
        // The recovered older run never reached its exit step: only the newer one finished.
        await until(
          'the older run is settled',
          async () => (await client.status(olderRun)) === 'cancelled',
        );
        const done = await rows<{ item_id: string }>(
          backend,
          'SELECT item_id FROM flowctl_done ORDER BY item_id',
        );
        expect(done.map((row) => row.item_id)).toEqual(['r-1']);
        await client.shutdown();
      } finally {
        for (const process of started) await process.child.kill('SIGKILL').catch(() => undefined);
        await backend.close().catch(() => undefined);
        await drop();
      }
    });
  });
}
