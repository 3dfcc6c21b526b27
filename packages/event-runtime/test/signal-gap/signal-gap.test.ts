// A signal (or a child's end) that lands while its execution still runs, and a process that dies
// with SIGKILL right after its suspension is durable, before its own look at the inbox (ADR 0033):
// the store must have made the suspension due at once, so another process finishes the execution.
// Real processes, a real SQLite file and the real Postgres.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { EventStore } from '../../src/index.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';
import { killTestProcesses, spawnTestProcess, type TestProcess } from '../../src/testing.js';
import { pgTestUrl } from '../support/throwaway-schemas.js';

const worker = join(import.meta.dirname, 'signal-gap-worker.ts');
/** Longest wait for one thing a worker does. */
const waitMs = 30_000;

afterEach(killTestProcesses);

function startWorker(env: Record<string, string>): TestProcess {
  return spawnTestProcess(worker, { env, stdin: true, waitMs });
}

/** Polls `check` every 20 ms until it holds; fails after `waitMs`. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Backend {
  env: Record<string, string>;
  store: EventStore;
}

const directory = mkdtempSync(join(tmpdir(), 'loom-signal-gap-'));
const schemas: string[] = [];
const stores: EventStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  rmSync(directory, { recursive: true, force: true });
  const admin = new pg.Client({ connectionString: pgTestUrl });
  await admin.connect();
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});
let counter = 0;

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'sqlite',
    async () => {
      const path = join(directory, `gap-${++counter}.db`);
      const store = SqliteEventStore.open({ path, migrate: true });
      stores.push(store);
      return { env: { LOOM_GAP_BACKEND: 'sqlite', LOOM_GAP_DB: path }, store };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = `loom_gap_${process.pid}_${++counter}_${Date.now().toString(36)}`;
      schemas.push(schema);
      const store = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
      await store.migrate();
      stores.push(store);
      return {
        env: { LOOM_GAP_BACKEND: 'postgres', LOOM_GAP_PG_URL: pgTestUrl, LOOM_GAP_SCHEMA: schema },
        store,
      };
    },
  ],
];

/** True when `id` is suspended and due now in `store`'s index. */
async function dueNow(store: EventStore, id: string): Promise<boolean> {
  const due = await store.findExecutions({ status: 'suspended', dueAtOrBeforeMs: Date.now() });
  return due.some((row) => row.executionId === id);
}

describe.each(backends)(
  'a signal while running, then SIGKILL after the suspension (%s)',
  (_, open) => {
    it('a signal sent after the driver read the inbox: the suspension is due, a new process finishes it', async () => {
      const { env, store } = await open();
      const id = `gap-signal-${counter}`;
      const first = startWorker({ ...env, LOOM_GAP_MODE: 'start-signal', LOOM_GAP_ID: id });
      // The driver looked at the inbox, found nothing, and is about to append its suspension.
      expect((await first.fact('suspending')).guard).toMatchObject({
        status: 'suspended',
        wakeOnSignalsAfter: 0,
      });
      expect(
        await store.sendSignal({ executionId: id, name: 'go', payload: { by: 'test' } }),
      ).toEqual({ signalId: 1, duplicate: false });
      first.child.stdin?.write('append\n');
      expect(await first.exit).toEqual({ code: null, signal: 'SIGKILL' });
      // Died right after its suspension: nobody looked at the inbox since. The store did.
      const [row] = (await store.findExecutions({ status: 'suspended' })).filter(
        (summary) => summary.executionId === id,
      );
      expect(row?.wakeAtMs).not.toBeNull();
      expect(await dueNow(store, id)).toBe(true);
      const second = startWorker({ ...env, LOOM_GAP_MODE: 'serve', LOOM_GAP_ID: id });
      expect(await second.fact('result')).toEqual({
        fact: 'result',
        result: { by: 'test' },
      });
      expect((await second.ended()).code).toBe(0);
    }, 60_000);

    it("a child that ends while its parent's suspension is held: the parent is due, a new process finishes it", async () => {
      const { env, store } = await open();
      const id = `gap-parent-${counter}`;
      const release = join(directory, `${id}.release`);
      const first = startWorker({
        ...env,
        LOOM_GAP_MODE: 'start-child',
        LOOM_GAP_ID: id,
        LOOM_GAP_RELEASE: release,
      });
      expect((await first.fact('suspending')).guard).toMatchObject({
        status: 'suspended',
        wakeOnSignalsAfter: 0,
      });
      // The parent saw its child running; now the child ends and signals the still-running parent.
      writeFileSync(release, '');
      await until(
        async () => (await store.readSignals(id)).some((s) => s.name === 'loom.child.settled'),
        "the child's completion signal in the parent's inbox",
      );
      first.child.stdin?.write('append\n');
      expect(await first.exit).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await dueNow(store, id)).toBe(true);
      const second = startWorker({ ...env, LOOM_GAP_MODE: 'serve', LOOM_GAP_ID: id });
      expect(await second.fact('result')).toEqual({
        fact: 'result',
        result: { parent: { child: 'released' } },
      });
      expect((await second.ended()).code).toBe(0);
    }, 60_000);
  },
);
