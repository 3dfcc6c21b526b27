// Issue 27, item 6 with real processes: an old-build worker (without the flow) and a new-build
// worker (with it) share a SQLite file or a Postgres schema. The old one polls timers ten times
// as often, so it sees a signalled execution's wake-up first; it must leave it to the new one,
// which finishes it at its next poll, while the old one lives on.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { EventStore, Flow } from '../../src/index.js';
import { createKernelRuntime } from '../../src/kernel.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';
import { until } from '../../src/testing/until.js';
import { killTestProcesses, spawnTestProcess } from '../../src/testing.js';
import { pgTestUrl, useThrowawaySchemas } from '../support/throwaway-schemas.js';
import { signalled } from './upgrade-flows.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-upgrade-'));
const worker = join(import.meta.dirname, 'upgrade-worker.ts');
const schemas = useThrowawaySchemas();
afterEach(killTestProcesses);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

interface Target {
  name: string;
  prepare(): Promise<{ env: Record<string, string>; open(): Promise<EventStore> }>;
}

const targets: Target[] = [
  {
    name: 'sqlite',
    prepare: async () => {
      const path = join(directory, 'upgrade.db');
      SqliteEventStore.open({ path, migrate: true }).close();
      return {
        env: { LOOM_UPGRADE_BACKEND: 'sqlite', LOOM_UPGRADE_DB: path },
        open: async () => SqliteEventStore.open({ path }),
      };
    },
  },
  {
    name: 'postgres',
    prepare: async () => {
      const schema = schemas.freshSchema();
      const store = await PostgresEventStore.open({ connectionString: pgTestUrl, schema });
      await store.migrate();
      await store.close();
      return {
        env: {
          LOOM_UPGRADE_BACKEND: 'postgres',
          LOOM_UPGRADE_PG_URL: pgTestUrl,
          LOOM_UPGRADE_SCHEMA: schema,
        },
        open: () => PostgresEventStore.open({ connectionString: pgTestUrl, schema }),
      };
    },
  },
];

describe.each(targets)('a rolling upgrade across processes on $name', (target) => {
  it('the old build leaves a signalled execution of the new flow to the new build, which finishes it while the old one lives', async () => {
    const { env, open } = await target.prepare();
    const old = spawnTestProcess(worker, {
      env: {
        ...env,
        LOOM_UPGRADE_BUILD: 'old',
        LOOM_UPGRADE_POLL_MS: '20',
      },
    });
    const fresh = spawnTestProcess(worker, {
      env: {
        ...env,
        LOOM_UPGRADE_BUILD: 'new',
        LOOM_UPGRADE_POLL_MS: '200',
      },
    });
    await old.line('ready');
    await fresh.line('ready');
    // A short-lived client starts the execution and lets it suspend; it drives nothing later.
    const store = await open();
    const client = createKernelRuntime({
      store,
      flows: [signalled as Flow<never, unknown>],
      timerPollMs: 0,
      recoverEveryMs: 0,
      inlineWaitMs: 0,
    });
    try {
      await client.start(signalled, null, { executionId: 'upgrade-1' });
      await until(
        async () =>
          (await store.findExecutions({ status: 'suspended' })).some(
            (row) => row.executionId === 'upgrade-1',
          ),
        'upgrade-1 to suspend',
      );
      await client.shutdown();
      await store.sendSignal({ executionId: 'upgrade-1', name: 'go', payload: 'ana' });
      await until(
        async () => (await store.read('upgrade-1')).some((e) => e.type === 'execution.completed'),
        'upgrade-1 to complete on the new build (the old one is still running)',
        15_000,
      );
      const events = await store.read('upgrade-1');
      expect(events.at(-1)?.payload).toEqual({ output: 'signalled by ana' });
      expect(old.exited()).toBe(false);
      expect(old.output()).not.toContain('FLOW_NOT_REGISTERED');
    } finally {
      await client.shutdown();
      await store.close();
    }
  });
});
