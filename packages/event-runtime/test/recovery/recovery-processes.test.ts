// Crash recovery with the default recovery settings, across real processes killed with SIGKILL,
// on a SQLite file and on Postgres. Every lease lasts ten minutes (recoveryTtlMs) and each test
// has a deadline well under that: whatever is recovered here was recovered because its owner was
// known dead, never because a lease ran out.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { EventStore, LeaseStore } from '../../src/index.js';
import { PostgresEventStore, PostgresLeaseStore } from '../../src/postgres.js';
import { SqliteEventStore, SqliteLeaseStore } from '../../src/sqlite.js';
import { killTestProcesses, spawnTestProcess, type TestProcess } from '../../src/testing.js';
import { pgTestUrl } from '../support/throwaway-schemas.js';

const worker = join(import.meta.dirname, 'recovery-worker.ts');
const testTimeoutMs = 60_000;
/** Longest wait for one thing a worker does (well under the ten-minute lease). */
const waitMs = 45_000;
const tenMinutesMs = 600_000;

afterEach(killTestProcesses);

function startWorker(env: Record<string, string>): TestProcess {
  return spawnTestProcess(worker, { env, waitMs });
}

/** Polls `check` every 50 ms until it holds; fails after `waitMs`. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Backend {
  env: Record<string, string>;
  store: EventStore;
  leases: LeaseStore;
  close(): Promise<void>;
}

const directory = mkdtempSync(join(tmpdir(), 'loom-recovery-'));
const schemas: string[] = [];
afterAll(async () => {
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
      const path = join(directory, `recovery-${++counter}.db`);
      const store = SqliteEventStore.open({ path, migrate: true });
      const leases = new SqliteLeaseStore(store.database, { readOnly: true });
      return {
        env: { LOOM_REC_BACKEND: 'sqlite', LOOM_REC_DB: path },
        store,
        leases,
        close: () => store.close(),
      };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = `loom_rec_${process.pid}_${++counter}_${Date.now().toString(36)}`;
      schemas.push(schema);
      const store = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
      await store.migrate();
      const leases = await PostgresLeaseStore.open({
        pool: store.connectionPool,
        schema,
        readOnly: true,
      });
      return {
        env: { LOOM_REC_BACKEND: 'postgres', LOOM_REC_PG_URL: pgTestUrl, LOOM_REC_SCHEMA: schema },
        store,
        leases,
        close: async () => {
          await leases.close();
          await store.close();
        },
      };
    },
  ],
];

async function completed(store: EventStore, executionId: string): Promise<boolean> {
  const events = await store.read(executionId);
  return events.some((event) => event.type === 'execution.completed');
}

async function status(store: EventStore, executionId: string): Promise<string> {
  for (const candidate of ['running', 'suspended', 'settled'] as const) {
    const found = await store.findExecutions({ status: candidate });
    if (found.some((summary) => summary.executionId === executionId)) return candidate;
  }
  return 'none';
}

for (const [name, open] of backends) {
  describe(`crash recovery with default settings: ${name}`, () => {
    for (const mode of ['lazy', 'eager'] as const) {
      it(
        `a restarted process resumes its own executions at once (killed ${mode === 'eager' ? 'holding leases' : 'before leasing'})`,
        async () => {
          const backend = await open();
          try {
            const first = startWorker({
              ...backend.env,
              LOOM_REC_START: 'own-a,own-b',
              LOOM_REC_HANG_PREFIX: 'own-',
              LOOM_REC_LEASE_MODE: mode,
            });
            const [, node] = (await first.match(
              /^ready node=(\S+)/,
              'the first ready',
            )) as string[];
            await first.match(/^effect own-a$/, 'own-a mid-step');
            await first.match(/^effect own-b$/, 'own-b mid-step');
            for (const id of ['own-a', 'own-b']) {
              const lease = await backend.leases.get(id);
              if (mode === 'eager') {
                expect(lease?.owner).toBe(node);
                // The lease would keep the execution for ten minutes on the old rules.
                expect(lease?.expiresAtMs).toBeGreaterThan(Date.now() + tenMinutesMs / 2);
              } else {
                expect(lease).toBeUndefined();
              }
            }
            await first.kill();
            expect(await status(backend.store, 'own-a')).toBe('running');

            const second = startWorker({ ...backend.env });
            const [, node2, recovered] = (await second.match(
              /^ready node=(\S+) recovered=(\S*)$/,
              'the restart ready',
            )) as string[];
            expect(node2).not.toBe(node);
            expect(recovered, second.output()).toBe('own-a,own-b');
            await until(
              async () =>
                (await completed(backend.store, 'own-a')) &&
                (await completed(backend.store, 'own-b')),
              'own-a and own-b to complete on the restarted process',
            );
            // Its stdout may reach this process after the store says completed: wait for it.
            await second.match(/^effect own-a$/, 'own-a run again on the restarted process');
          } finally {
            await killTestProcesses();
            await backend.close();
          }
        },
        testTimeoutMs,
      );
    }

    it(
      "a parent suspended on its child when its process was killed resumes on the restart by its child's end, not by a recovery round",
      async () => {
        const backend = await open();
        try {
          const first = startWorker({
            ...backend.env,
            LOOM_REC_START_PARENTS: 'par-1',
            LOOM_REC_HANG_PREFIX: 'par-',
            LOOM_REC_LEASE_MODE: 'eager',
          });
          const [, node] = (await first.match(/^ready node=(\S+)/, 'the first ready')) as string[];
          await first.match(/^effect par-1\.0$/, "the child's step hanging");
          await until(
            async () => (await status(backend.store, 'par-1')) === 'suspended',
            'the parent to suspend on its child',
          );
          // Suspended, yet still leased: its release rides the next lease tick, after the kill.
          expect((await backend.leases.get('par-1'))?.owner).toBe(node);
          await first.kill();

          // Only the boot round recovers: the next one is ten minutes away.
          const second = startWorker({ ...backend.env, LOOM_REC_EVERY_MS: String(tenMinutesMs) });
          const [, recovered] = (await second.match(
            /^ready node=\S+ recovered=(\S*)$/,
            'the restart ready',
          )) as string[];
          expect(recovered, second.output()).toBe('par-1.0');
          await until(
            async () => completed(backend.store, 'par-1'),
            "the parent to complete, woken by its child's end on the restarted process",
          );
          const events = await backend.store.read('par-1');
          expect(events.at(-1)?.payload).toEqual({ output: 'parent of done' });
        } finally {
          await killTestProcesses();
          await backend.close();
        }
      },
      testTimeoutMs,
    );

    it(
      "a live sibling's executions are never taken; a dead node's are, within recoverEveryMs",
      async () => {
        const backend = await open();
        try {
          const sibling = startWorker({
            ...backend.env,
            LOOM_REC_START: 'sib-a',
            LOOM_REC_HANG_PREFIX: 'sib-',
          });
          await sibling.match(/^effect sib-a$/, 'sib-a mid-step');
          const victim = startWorker({
            ...backend.env,
            LOOM_REC_START: 'vic-a',
            LOOM_REC_HANG_PREFIX: 'vic-',
            LOOM_REC_LEASE_MODE: 'eager',
          });
          // The victim's boot recovery ran while the sibling was alive: it took nothing of it.
          const [, victimRecovered] = (await victim.match(
            /^ready node=\S+ recovered=(\S*)$/,
            'the victim ready',
          )) as string[];
          expect(victimRecovered).toBe('');
          await victim.match(/^effect vic-a$/, 'vic-a mid-step');
          await victim.kill();

          // The sibling's periodic recovery (every 5 s by default) sees the victim's claim gone.
          await until(
            async () => completed(backend.store, 'vic-a'),
            "the sibling to finish the dead victim's execution",
          );
          await sibling.match(/^effect vic-a$/, "the victim's step run again on the sibling");

          // A third process boots while the sibling lives: its recovery leaves sib-a alone.
          const third = startWorker({ ...backend.env });
          const [, thirdRecovered] = (await third.match(
            /^ready node=\S+ recovered=(\S*)$/,
            'the third ready',
          )) as string[];
          expect(thirdRecovered).toBe('');
          expect(await status(backend.store, 'sib-a')).toBe('running');
          expect(third.output()).not.toContain('effect sib-a');
        } finally {
          await killTestProcesses();
          await backend.close();
        }
      },
      testTimeoutMs,
    );
  });
}
