import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend, LoomError, StoredEvent } from '@loom/event-runtime';
import { killTestProcesses, spawnTestProcess } from '@loom/event-runtime/testing';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  createRuntime,
  defineEffect,
  defineFlow,
  PlacementDispatcher,
  type Runtime,
} from '../../src/index.js';
import { openPostgres } from '../../src/postgres.js';
import { openSqlite } from '../../src/sqlite.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-placement-'));
const workerScript = join(import.meta.dirname, 'placement-worker.ts');
const runtimes: Runtime[] = [];
const drops: Array<() => Promise<void>> = [];
let counter = 0;
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.shutdown();
  await killTestProcesses();
  for (const drop of drops.splice(0)) await drop();
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Starts placement-worker.ts with `args`; `ready` resolves with what it printed after "ready". */
function startWorker(args: string[]) {
  const worker = spawnTestProcess(workerScript, { args, name: 'placement worker' });
  const ready = worker.match(/ready (\S+)/, 'ready').then((match) => match[1] as string);
  return { child: worker.child, ready, exited: worker.exit, pid: worker.child.pid as number };
}

async function kill(worker: ReturnType<typeof startWorker>): Promise<void> {
  worker.child.kill('SIGKILL');
  await worker.exited;
}

/** Polls `check` every 20 ms until it holds; fails after `deadlineMs`. */
async function until(check: () => boolean | Promise<boolean>, what: string, deadlineMs = 30_000) {
  for (let waitedMs = 0; waitedMs < deadlineMs; waitedMs += 20) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
}

const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
const ofType = (events: StoredEvent[], type: string) => events.filter((e) => e.type === type);

/** A port nothing listens on now (bound, then closed), for a worker to take. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function database(): string {
  const path = join(directory, `placement-${++counter}.db`);
  openSqlite({ path, migrate: true }).close();
  return path;
}

// The caller's declarations of the worker's effects: same names, handlers that must not run here.
const embed = defineEffect('embed', (_: { text: string }): { vector: number[]; pid: number } => {
  throw new Error('embed must run on the remote worker');
});
const slow = defineEffect(
  'slow',
  (_: { n: number }): { doubled: number; pid: number; attempt: number } => {
    throw new Error('slow must run on the remote worker');
  },
);

describe('remote effects in a real worker process on 127.0.0.1', () => {
  it("a remote worker runs the effect and its result is journaled in the caller's log", async () => {
    const worker = startWorker([
      'effects',
      String(await freePort()),
      join(directory, `e${++counter}.log`),
      'ok',
    ]);
    const url = await worker.ready;
    const placement = new PlacementDispatcher({ remotes: [{ name: 'gpu-1', url, tags: ['gpu'] }] });
    const index = defineFlow({ name: 'index' }, async (ctx, input: { text: string }) =>
      ctx.step('embed', placement.effect(embed, input, { tags: ['gpu'] })),
    );
    const runtime = createRuntime({ backend: openSqlite({ path: database() }), flows: [index] });
    runtimes.push(runtime);
    const handle = await runtime.start(index, { text: 'hi' }, { executionId: 'index-1' });
    const result = await handle.result();
    expect(result).toEqual({ vector: [104, 105], pid: worker.pid });
    expect(worker.pid).not.toBe(process.pid);
    const [completed] = ofType(await runtime.store.read('index-1'), 'step.completed');
    expect(completed?.payload).toMatchObject({
      name: 'embed',
      result: { vector: [104, 105], pid: worker.pid },
    });
  });

  it('SIGKILL of the remote worker mid-effect is a failed attempt: restarted, the step retries with the same key and completes', async () => {
    const port = await freePort();
    const log = join(directory, `slow${++counter}.log`);
    const first = startWorker(['effects', String(port), log, 'hang']);
    const url = await first.ready;
    const placement = new PlacementDispatcher({ remotes: [{ name: 'w', url }] });
    const double = defineFlow({ name: 'double' }, async (ctx, input: { n: number }) =>
      ctx.step('slow', placement.effect(slow, input, { remote: 'w' }), {
        retry: { attempts: 40, backoff: { initialMs: 50, factor: 2, maxMs: 400, jitter: 'none' } },
      }),
    );
    const runtime = createRuntime({ backend: openSqlite({ path: database() }), flows: [double] });
    runtimes.push(runtime);
    const handle = await runtime.start(double, { n: 21 }, { executionId: 'double-1' });
    await until(() => lines(log).length === 1, 'the first attempt to reach the remote worker');
    expect(lines(log)).toEqual([`1 ${first.pid} double-1/0`]);
    await kill(first);
    const second = startWorker(['effects', String(port), log, 'ok']);
    await second.ready;

    const result = (await handle.result()) as { doubled: number; pid: number; attempt: number };
    expect(result.doubled).toBe(42);
    expect(result.pid).toBe(second.pid);
    const events = await runtime.store.read('double-1');
    const failed = ofType(events, 'step.attempt_failed');
    // Every attempt before the last failed because the worker was dead or dying, and was counted.
    expect(failed.length).toBe(result.attempt - 1);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    for (const event of failed) {
      expect(event.payload).toMatchObject({ error: { code: 'REMOTE_UNAVAILABLE' } });
    }
    expect(ofType(events, 'step.completed')).toHaveLength(1);
    expect(ofType(events, 'execution.completed')).toHaveLength(1);
    expect(lines(log)).toEqual([
      `1 ${first.pid} double-1/0`,
      `${result.attempt} ${second.pid} double-1/0`,
    ]);
  });
});

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** A store shared by the test and its worker processes: the target they open, and cleanup. */
interface SharedStore {
  target: string;
  open(): Promise<Backend>;
  drop(): Promise<void>;
}

const sharedStores: Array<[string, () => Promise<SharedStore>]> = [
  [
    'sqlite',
    async () => {
      const path = database();
      return {
        target: `sqlite:${path}`,
        open: async () => openSqlite({ path, busyTimeoutMs: 10_000 }),
        drop: async () => {},
      };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = `loom_placement_${process.pid}_${++counter}`;
      await (await openPostgres({ connectionString: pgUrl, schema, migrate: true })).close();
      return {
        target: `postgres:${schema}`,
        open: () => openPostgres({ connectionString: pgUrl, schema }),
        drop: async () => {
          const dropper = await openPostgres({ connectionString: pgUrl, schema });
          await dropper.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await dropper.close();
        },
      };
    },
  ],
];

for (const [storeName, makeStore] of sharedStores)
  describe(`execution placement by tags, across processes sharing one ${storeName} store`, () => {
    // The same flows as placement-worker.ts, here with bodies that say where they ran.
    const body = async () => ({ pid: process.pid, tags: [] as string[] });
    const render = defineFlow({ name: 'render', placement: { tags: ['gpu'] } }, async (ctx) =>
      ctx.step('draw', body),
    );
    const plain = defineFlow({ name: 'plain' }, async (ctx) => ctx.step('work', body));

    it('an untagged runtime refuses to start, resume or recover a gpu execution; a gpu worker recovers it and runs queued ones', async () => {
      const shared = await makeStore();
      drops.push(() => shared.drop());
      const log = join(directory, `runs${++counter}.log`);
      const first = startWorker(['runtime', shared.target, 'gpu', 'start', log, 'hang']);
      await first.ready;
      await until(() => lines(log).length === 2, 'both steps to start on the gpu node');
      await kill(first);

      const errors: unknown[] = [];
      const untagged = createRuntime({
        backend: await shared.open(),
        flows: [render, plain],
        leaseMode: 'eager',
        leaseTtlMs: 1_000,
        recoverEveryMs: 0,
        timerPollMs: 0,
        onError: (error) => errors.push(error),
      });
      runtimes.push(untagged);
      const untaggedLeases: string[] = [];
      untagged.events.on('lease:acquired', (event) => untaggedLeases.push(event.executionId));
      const before = (await untagged.store.read('render-1')).length;
      // Recovery rounds until the dead node's plain execution comes back here; the gpu one never may.
      const recovered = new Set<string>();
      await until(async () => {
        for (const id of await untagged.recover()) recovered.add(id);
        return recovered.has('plain-1');
      }, 'plain-1 to be recovered by the untagged runtime');
      expect(recovered.has('render-1')).toBe(false);
      // It did not even try: no lease taken on render-1, no FLOW_NOT_REGISTERED reported.
      expect(untaggedLeases).not.toContain('render-1');
      expect(errors.map((error) => (error as LoomError).code)).not.toContain('FLOW_NOT_REGISTERED');
      expect(await untagged.attach('plain-1').result()).toEqual({ pid: process.pid, tags: [] });
      expect((await untagged.store.read('render-1')).length).toBe(before);
      expect(await untagged.status('render-1')).toBe('running');

      const refusedResume = (await untagged
        .resume('render-1')
        .catch((e: unknown) => e)) as LoomError;
      expect(refusedResume).toMatchObject({
        code: 'PLACEMENT_UNSATISFIED',
        fields: { flow: 'render', tags: ['gpu'], executionId: 'render-1' },
      });
      const refusedStart = (await untagged
        .start(render, undefined, { executionId: 'render-2' })
        .catch((e: unknown) => e)) as LoomError;
      expect(refusedStart.code).toBe('PLACEMENT_UNSATISFIED');
      await expect(untagged.status('render-2')).rejects.toMatchObject({
        code: 'EXECUTION_NOT_FOUND',
      });

      // Untagged nodes enqueue; a gpu node working the queue runs it, and recovers render-1.
      await untagged.enqueue('gpu-jobs', render, undefined, { itemId: 'job-1' });
      const second = startWorker(['runtime', shared.target, 'gpu', 'work', log, 'ok']);
      await second.ready;
      expect(await untagged.attach('render-1').result()).toEqual({
        pid: second.pid,
        tags: ['gpu'],
      });
      // attach() needs the execution in the log: wait for the worker to claim and start it.
      await until(
        async () =>
          (await untagged.status('queue:gpu-jobs:job-1').catch(() => undefined)) !== undefined,
        'the gpu worker to start the queued run',
      );
      expect(await untagged.attach('queue:gpu-jobs:job-1').result()).toEqual({
        pid: second.pid,
        tags: ['gpu'],
      });
      // The attempt the first gpu node died in is counted in the log.
      expect(ofType(await untagged.store.read('render-1'), 'step.interrupted')).toHaveLength(1);
    });
  });
