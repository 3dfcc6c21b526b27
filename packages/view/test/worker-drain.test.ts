// `loom worker` as the built binary, on a SQLite file and on a Postgres schema: it runs the flows
// a module exports (queue items, a recovered execution whose timer it fires), and SIGTERM drains
// it: with a short deadline what it held is handed back (leases released, queue claims returned)
// and a second worker finishes it at once, with nothing lost and nothing ended twice; with a long
// deadline what it held finishes before it exits. Bad flags and modules are typed errors.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from '@loom/event-runtime';
import { killTestProcesses } from '@loom/event-runtime/testing';
import { createRuntime, type WorkflowDefinition } from '@loom/workflow-runtime';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbTarget, dbTargets, pgUrl } from './db-targets.js';
import { loom } from './fixture.js';
import { parseDrained, spawnLoomWorker, workerFlows } from './worker/loom-worker.js';

const { dir, targets, cleanup } = dbTargets('worker-drain');
afterAll(async () => {
  await killTestProcesses();
  await cleanup();
});

const { job, napper, render } = (await import(workerFlows)) as {
  job: WorkflowDefinition<{ n: number }, number>;
  napper: WorkflowDefinition<{ ms: number }, string>;
  render: WorkflowDefinition<{ n: number }, string>;
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 50 ms until it is true; throws naming `what` after `ms`. */
async function until(what: string, check: () => Promise<boolean> | boolean, ms = 40_000) {
  for (const deadline = Date.now() + ms; !(await check()); await pause(50)) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
  }
}

function effectLines(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
}

/** Live leases and live queue claims `nodeId` still has, read behind the stores' backs. */
async function liveHolds(target: DbTarget, nodeId: string): Promise<number> {
  const now = Date.now();
  if (target.name === 'sqlite') {
    const db = new Database(target.env.SQLITE_PATH as string, { readonly: true });
    try {
      const leases = db
        .prepare('SELECT count(*) AS n FROM loom_leases WHERE owner = ? AND expires_at_ms > ?')
        .get(nodeId, now) as { n: number };
      const claims = db
        .prepare(
          `SELECT count(*) AS n FROM loom_queue_items
            WHERE owner = ? AND status = 'running' AND claim_expires_at_ms > ?`,
        )
        .get(nodeId, now) as { n: number };
      return leases.n + claims.n;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    const s = target.env.PG_SCHEMA as string;
    const leases = await client.query(
      `SELECT count(*)::int AS n FROM ${s}.leases WHERE owner = $1 AND expires_at_ms > $2`,
      [nodeId, now],
    );
    const claims = await client.query(
      `SELECT count(*)::int AS n FROM ${s}.queue_items
        WHERE owner = $1 AND status = 'running' AND claim_expires_at_ms > $2`,
      [nodeId, now],
    );
    return (leases.rows[0].n as number) + (claims.rows[0].n as number);
  } finally {
    await client.end();
  }
}

/** Terminal events per execution id, from the log. */
async function terminals(backend: Backend, ids: readonly string[]) {
  const ends = new Map<string, { type: string; output: unknown }[]>();
  for (const id of ids) {
    const events = await backend.events.read(id);
    ends.set(
      id,
      events
        .filter((event) =>
          ['execution.completed', 'execution.failed', 'execution.cancelled'].includes(event.type),
        )
        .map((event) => ({
          type: event.type,
          output: (event.payload as { output?: unknown } | null)?.output,
        })),
    );
  }
  return ends;
}

describe.each(targets)('loom worker on $name', (target) => {
  const workerArgs = (queue: string, drainTimeoutMs: number) => [
    '--db',
    target.db,
    '--flows',
    workerFlows,
    '--queues',
    queue,
    // Long: a claim or lease that was not handed back would hold its work past the test.
    '--lease-ttl',
    '120000',
    '--concurrency',
    '6',
    '--poll',
    '50',
    '--drain-timeout',
    String(drainTimeoutMs),
  ];

  it('SIGTERM with a short deadline hands back what it held; a second worker finishes it all: none lost, none twice', async () => {
    const effects = join(dir, `${target.name}-handback.log`);
    writeFileSync(effects, '');
    const env = { LOOM_WORKER_EFFECTS: effects, LOOM_WORKER_STEP_MS: '300' };
    const backend = await target.open();
    const seed = createRuntime({
      backend,
      closeBackend: false,
      flows: [job, napper],
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    const items = 18;
    for (let n = 0; n < items; n++) {
      await seed.enqueue('handback', job, { n }, { itemId: `j${n}` });
    }
    // Started here and left at once: a worker's recovery takes it, its timer poll wakes it.
    await seed.start(napper, { ms: 1_500 }, { executionId: 'nap-1' });
    await seed.shutdown();

    const first = spawnLoomWorker(workerArgs('handback', 200), env);
    const firstNode = await first.ready;
    await until('six effects started', () => effectLines(effects).length >= 6);
    first.child.kill('SIGTERM');
    expect((await first.exit).code).toBe(0);
    const drained = parseDrained(
      first
        .output()
        .split('\n')
        .find((line) => line.includes(' drained: ')) ?? '',
    );
    expect(drained.inFlight).toBeGreaterThan(0);
    expect(drained.finished + drained.handedBack).toBe(drained.inFlight);
    // Steps take 300 ms each and the deadline is 200 ms: some work went back.
    expect(drained.handedBack + drained.queueItemsHandedBack).toBeGreaterThan(0);
    // Nothing stays held: no live lease, no live claim of the drained worker.
    expect(await liveHolds(target, firstNode)).toBe(0);

    const second = spawnLoomWorker(workerArgs('handback', 30_000), env);
    await second.ready;
    const reader = createRuntime({
      backend,
      closeBackend: false,
      flows: [job, napper],
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    // Claims and leases live 120 s: only handed-back work can finish within this deadline.
    await until(
      'every item completed and nap-1 woken',
      async () =>
        (await reader.queueStats('handback')).completed === items &&
        (await reader.status('nap-1')) === 'completed',
      40_000,
    );
    second.child.kill('SIGTERM');
    expect((await second.exit).code).toBe(0);
    await reader.shutdown();

    const ids = [...Array.from({ length: items }, (_, n) => `queue:handback:j${n}`), 'nap-1'];
    const ends = await terminals(backend, ids);
    for (const [id, list] of ends) {
      expect(list, id).toHaveLength(1);
      expect(list[0]?.type, id).toBe('execution.completed');
    }
    for (let n = 0; n < items; n++) {
      expect(ends.get(`queue:handback:j${n}`)?.[0]?.output).toBe(2 * n + 1);
    }
    expect(ends.get('nap-1')?.[0]?.output).toBe('rested');
    // Every step ran; a step ran again only for an execution that was handed back mid-step.
    const runs = effectLines(effects);
    const distinct = new Set(runs);
    expect(distinct.size).toBe(3 * items + 2);
    expect(runs.length - distinct.size).toBeLessThanOrEqual(drained.handedBack);
    await backend.close();
  }, 60_000);

  // SIGINT (Ctrl-C) on SQLite, SIGTERM on Postgres: both drain.
  const stopSignal = target.name === 'sqlite' ? 'SIGINT' : 'SIGTERM';
  it(`${stopSignal} with a long deadline finishes what it holds before it exits 0`, async () => {
    const effects = join(dir, `${target.name}-finish.log`);
    writeFileSync(effects, '');
    const backend = await target.open();
    const seed = createRuntime({ backend, flows: [job], timerPollMs: 0, recoverEveryMs: 0 });
    for (let n = 0; n < 30; n++) await seed.enqueue('finish', job, { n }, { itemId: `f${n}` });
    await seed.shutdown();

    const worker = spawnLoomWorker(workerArgs('finish', 30_000), {
      LOOM_WORKER_EFFECTS: effects,
      LOOM_WORKER_STEP_MS: '100',
    });
    await worker.ready;
    await until('work in flight', () => effectLines(effects).length >= 3);
    worker.child.kill(stopSignal);
    expect((await worker.exit).code).toBe(0);
    const drained = parseDrained(
      worker
        .output()
        .split('\n')
        .find((line) => line.includes(' drained: ')) ?? '',
    );
    expect(drained.inFlight).toBeGreaterThan(0);
    expect(drained.finished).toBe(drained.inFlight);
    expect(drained.handedBack).toBe(0);
    expect(drained.queueItemsHandedBack).toBe(0);
    // What it finished is completed; what it never claimed still waits for the next worker.
    const after = await target.open();
    const reader = createRuntime({
      backend: after,
      flows: [job],
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    const stats = await reader.queueStats('finish');
    expect(stats.claimed).toBe(0);
    expect(stats.completed).toBeGreaterThanOrEqual(drained.finished);
    expect(stats.completed + stats.depth).toBe(30);
    await reader.shutdown();
  }, 60_000);
});

describe('loom worker --tags', () => {
  const sqlite = targets.find((target) => target.name === 'sqlite') as DbTarget;

  it('a worker tagged gpu runs queued work of a flow placed on gpu, which the enqueuing node may not run', async () => {
    const backend = await sqlite.open();
    const seed = createRuntime({
      backend,
      closeBackend: false,
      flows: [render],
      timerPollMs: 0,
      recoverEveryMs: 0,
    });
    // The enqueuing node has no tags: it may enqueue the placed flow, never start it.
    await expect(seed.start(render, { n: 0 })).rejects.toMatchObject({
      code: 'PLACEMENT_UNSATISFIED',
    });
    for (let n = 1; n <= 3; n++) await seed.enqueue('frames', render, { n }, { itemId: `r${n}` });
    const worker = spawnLoomWorker(
      [
        '--db',
        sqlite.db,
        '--flows',
        workerFlows,
        '--queues',
        'frames',
        '--tags',
        'gpu, eu',
        '--poll',
        '50',
      ],
      {},
    );
    expect(await worker.line('loom: worker ')).toContain('; tags gpu, eu');
    await until(
      'three frames rendered',
      async () => (await seed.queueStats('frames')).completed === 3,
    );
    worker.child.kill('SIGTERM');
    expect((await worker.exit).code).toBe(0);
    const ends = await terminals(backend, [
      'queue:frames:r1',
      'queue:frames:r2',
      'queue:frames:r3',
    ]);
    expect([...ends.values()].map((list) => list.map((end) => end.output))).toEqual([
      ['frame 1'],
      ['frame 2'],
      ['frame 3'],
    ]);
    await seed.shutdown();
    await backend.close();
  }, 60_000);
});

describe('loom worker: bad flags and modules', () => {
  const sqlite = targets.find((target) => target.name === 'sqlite') as DbTarget;

  // One test per refusal: each spawns one CLI process, so none waits on all of them.
  const run = (args: string[]) => loom(['worker', '--json', ...args]);
  const code = (stderr: string) =>
    (JSON.parse(stderr.slice(stderr.indexOf('{'))) as { error: { code: string } }).error.code;
  beforeAll(async () => {
    await (await sqlite.open()).close();
  });

  it('refuses no --flows with exit code 2', async () => {
    const noFlows = await run(['--db', sqlite.db]);
    expect(noFlows.code).toBe(2);
    expect(noFlows.stderr).toContain('--flows');
  });

  it('refuses a flows module that is missing or exports no flow: INVALID_ARGUMENT, exit code 2', async () => {
    const missing = await run(['--db', sqlite.db, '--flows', join(dir, 'nope.mjs')]);
    expect(missing.code).toBe(2);
    expect(code(missing.stderr)).toBe('INVALID_ARGUMENT');
    const none = join(dir, 'none.mjs');
    writeFileSync(none, 'export const answer = 42;\n');
    const empty = await run(['--db', sqlite.db, '--flows', none]);
    expect(empty.code).toBe(2);
    expect(code(empty.stderr)).toBe('INVALID_ARGUMENT');
  });

  it.each([
    ['--drain-timeout', 'soon'],
    ['--drain-timeout', '-1'],
    ['--lease-ttl', '0'],
    ['--concurrency', '2.5'],
    ['--queues', 'a,,b'],
    ['--tags', 'gpu,'],
    ['--health-port', '70000'],
  ])('refuses %s %s: INVALID_ARGUMENT naming the flag, exit code 2', async (...flag) => {
    const bad = await run(['--db', sqlite.db, '--flows', workerFlows, ...flag]);
    expect(bad.code).toBe(2);
    expect(code(bad.stderr)).toBe('INVALID_ARGUMENT');
    expect(bad.stderr).toContain(flag[0]);
  });

  it('refuses no --db (INVALID_DB_URL, exit code 2) and a database without the schema (SCHEMA_NOT_MIGRATED, exit code 5)', async () => {
    const noDb = await run(['--flows', workerFlows]);
    expect(noDb.code).toBe(2);
    expect(code(noDb.stderr)).toBe('INVALID_DB_URL');
    const bare = join(dir, 'bare.db');
    writeFileSync(bare, '');
    const unmigrated = await run(['--db', `sqlite:${bare}`, '--flows', workerFlows]);
    expect(unmigrated.code).toBe(5);
    expect(code(unmigrated.stderr)).toBe('SCHEMA_NOT_MIGRATED');
  });
});
