// P15: `view.runs` over 1,000 runs with 500 waiting approvals costs three queries, whatever the
// page's size: the index page, the listed runs' logs, and the approval decisions of the waiting
// agent runs. Counted at the store boundary (every EventStore call and every page read; on
// Postgres also every `pool.query` of the page reader), on a real SQLite file and real Postgres.
import type { Backend, EventStore } from '@loom/event-runtime';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openOperator } from '../src/index.js';
import {
  type PageReader,
  postgresPageReader,
  sqlitePageReader,
} from '../src/internal/page-reader.js';
import { type View, viewOver } from '../src/open-view.js';
import { dbTargets, pgUrl } from './db-targets.js';
import { seededRunId, seedRuns } from './many-runs.js';

const { targets, cleanup } = dbTargets('view-p15');
afterAll(cleanup);

const runCount = 1_000;

/** Wraps every method of `target`, counting calls by name into `calls`. */
function counting<T extends object>(target: T, calls: Map<string, number>, prefix: string): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const name = `${prefix}${String(property)}`;
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return value.apply(object, args);
      };
    },
  });
}

describe.each(targets)(
  'P15 on $name: runs over 1,000 runs with 500 waiting approvals',
  (target) => {
    const calls = new Map<string, number>();
    let backend: Backend;
    let pool: pg.Pool | undefined;
    let view: View;

    beforeAll(async () => {
      const seeding = await target.open();
      await seedRuns(seeding, runCount);
      backend = await target.open();
      let pages: PageReader;
      if (target.name === 'sqlite') {
        pages = sqlitePageReader((backend.events as unknown as { database: never }).database);
      } else {
        pool = new pg.Pool({ connectionString: pgUrl });
        const schema = new URL(target.db).searchParams.get('schema') as string;
        pages = postgresPageReader(counting(pool, calls, 'pg.'), schema);
      }
      view = viewOver(
        { ...backend, events: counting(backend.events, calls, 'store.') as EventStore },
        counting(pages, calls, 'pages.'),
      );
    });

    afterAll(async () => {
      await view?.close();
      await pool?.end();
    });

    const counted = async <T>(work: () => Promise<T>) => {
      calls.clear();
      const result = await work();
      return { result, calls: Object.fromEntries(calls) };
    };

    it('one page of 1,000 runs: 500 waiting approvals, in three queries', async () => {
      const { result, calls } = await counted(() => view.runs({ limit: runCount }));
      expect(result.runs).toHaveLength(runCount);
      expect(result.runs[0]?.id).toBe(seededRunId(0));
      const agents = result.runs.filter((run) => run.kind === 'agent');
      expect(agents).toHaveLength(runCount / 2);
      expect(agents.every((run) => run.status === 'suspended' && run.pendingApprovals === 1)).toBe(
        true,
      );
      const orders = result.runs.filter((run) => run.kind === 'flow');
      expect(orders.every((run) => run.status === 'completed' && run.steps === 2)).toBe(true);
      expect(calls).toEqual({
        'store.findExecutions': 1,
        'pages.logs': 1,
        'pages.signals': 1,
        ...(target.name === 'postgres' ? { 'pg.query': 2 } : {}),
      });
    });

    it('decided approvals stop counting as pending; still three queries, and pendingApprovals() too', async () => {
      const operator = await openOperator({ db: target.db });
      try {
        for (let i = 1; i < 20; i += 2) {
          await operator.approve(await approvalId(seededRunId(i)), { by: 'ana' });
        }
      } finally {
        await operator.close();
      }
      const page = await counted(() => view.runs({ limit: runCount }));
      const pending = page.result.runs.reduce((sum, run) => sum + run.pendingApprovals, 0);
      expect(pending).toBe(runCount / 2 - 10);
      expect(page.calls['store.findExecutions']).toBe(1);
      expect(page.calls['pages.logs']).toBe(1);
      expect(page.calls['pages.signals']).toBe(1);
      expect(page.calls['store.read'] ?? 0).toBe(0);
      expect(page.calls['store.readSignals'] ?? 0).toBe(0);

      const approvals = await counted(() => view.pendingApprovals());
      // The seeded template agent run waits too.
      expect(approvals.result).toHaveLength(runCount / 2 - 10 + 1);
      expect(approvals.result.some((a) => a.runId === seededRunId(1))).toBe(false);
      expect(approvals.result.some((a) => a.runId === seededRunId(21))).toBe(true);
      expect(approvals.calls).toEqual({
        'store.findExecutions': 1,
        'pages.logs': 1,
        'pages.signals': 1,
        ...(target.name === 'postgres' ? { 'pg.query': 2 } : {}),
      });
    });

    /** A seeded agent run's one approval, from its detail. */
    async function approvalId(runId: string): Promise<string> {
      const id = (await view.show(runId)).approvals[0]?.id;
      if (id === undefined) throw new Error(`${runId} has no approval`);
      return id;
    }
  },
);
