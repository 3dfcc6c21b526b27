// P15: `view.runs` over 1,000 runs with 500 waiting approvals vs a bare SELECT of the same rows,
// on SQLite and Postgres, side by side in one process (variants interleaved in each round).
// Run: pnpm --filter @loom/view exec tsx bench/p15-runs.ts   (P15_ROUNDS, default 15)
// Postgres: LOOM_TEST_PG (default postgres://root@127.0.0.1:5432/test); unreachable: skipped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Backend } from '@loom/event-runtime';
import Database from 'better-sqlite3';
import pg from 'pg';
import { catchUpProjections, initProjections, openView } from '../src/index.js';
import { seedRuns } from '../test/many-runs.js';

const runs = 1_000;
const rounds = Number(process.env.P15_ROUNDS ?? 15);
const callsPerRound = 5;
const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';

/** A query of the same rows without the view: rows as the driver returns them, nothing decoded. */
type Bare = () => Promise<unknown>;

interface Target {
  name: string;
  db: string;
  open(): Promise<Backend>;
  /** The index page alone (what P15 literally names), and the three reads `runs` makes. */
  bare(): Promise<{ index: Bare; same: Bare; projection: Bare; close(): Promise<void> }>;
  drop(): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), 'loom-view-p15-'));
const path = join(dir, 'p15.db');
const schema = `view_p15_bench_${process.pid}`;
const indexSql = (table: string) => `SELECT * FROM ${table} ORDER BY execution_id LIMIT ${runs}`;

const targets: Target[] = [
  {
    name: 'SQLite',
    db: `sqlite:${path}`,
    open: async () => {
      const { openSqlite } = await import('@loom/event-runtime/sqlite');
      return openSqlite({ path, migrate: true, synchronous: 'NORMAL' });
    },
    bare: async () => {
      const raw = new Database(path, { readonly: true });
      const index = raw.prepare(indexSql('loom_executions'));
      const events = raw.prepare(
        'SELECT * FROM loom_events WHERE execution_id IN (SELECT value FROM json_each(?)) ORDER BY execution_id, sequence',
      );
      const signals = raw.prepare(
        "SELECT * FROM loom_signals WHERE execution_id IN (SELECT value FROM json_each(?)) AND substr(name, 1, 9) = 'approval:' ORDER BY execution_id, signal_id",
      );
      const projection = raw.prepare(
        `SELECT * FROM loom_projection_runs ORDER BY id LIMIT ${runs + 1}`,
      );
      return {
        index: async () => index.all(),
        projection: async () => projection.all(),
        same: async () => {
          const rows = index.all() as { execution_id: string; status: string }[];
          events.all(JSON.stringify(rows.map((r) => r.execution_id)));
          const waiting = rows.filter((r) => r.status === 'suspended').map((r) => r.execution_id);
          return signals.all(JSON.stringify(waiting));
        },
        close: async () => {
          raw.close();
        },
      };
    },
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  },
  {
    name: 'Postgres',
    db: `${pgUrl}?schema=${schema}`,
    open: async () => {
      const { openPostgres } = await import('@loom/event-runtime/postgres');
      return openPostgres({ connectionString: pgUrl, schema, migrate: true });
    },
    bare: async () => {
      const pool = new pg.Pool({ connectionString: pgUrl });
      const s = `"${schema}"`;
      return {
        index: () => pool.query(indexSql(`${s}.executions`)),
        projection: () =>
          pool.query(`SELECT * FROM ${s}.loom_projection_runs ORDER BY id LIMIT ${runs + 1}`),
        same: async () => {
          const { rows } = await pool.query<{ execution_id: string; status: string }>(
            indexSql(`${s}.executions`),
          );
          await pool.query(
            `SELECT * FROM ${s}.events WHERE execution_id = ANY($1::text[]) ORDER BY execution_id, sequence`,
            [rows.map((r) => r.execution_id)],
          );
          const waiting = rows.filter((r) => r.status === 'suspended').map((r) => r.execution_id);
          return pool.query(
            `SELECT * FROM ${s}.signals WHERE execution_id = ANY($1::text[]) AND left(name, 9) = 'approval:' ORDER BY execution_id, signal_id`,
            [waiting],
          );
        },
        close: () => pool.end(),
      };
    },
    drop: async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

console.log(
  `P15: ${runs} runs (500 completed 2-step flows, 500 agent runs each waiting for an approval), ` +
    `one page of ${runs}; ${callsPerRound} calls per variant per round, ${rounds} rounds interleaved`,
);
console.log(
  '| Backend | Variant | ms per page, median (min..max) | vs bare index SELECT | vs bare SELECT of the same rows |',
);
console.log('|---|---|---|---|---|');
for (const target of targets) {
  let backend: Backend;
  try {
    backend = await target.open();
  } catch (error) {
    console.log(`| ${target.name} | skipped: ${(error as Error).message} | | | |`);
    continue;
  }
  try {
    await seedRuns(backend, runs);
    const view = await openView({ db: target.db, useProjections: false });
    const first = await view.runs({ limit: runs });
    const pending = first.runs.reduce((sum, run) => sum + run.pendingApprovals, 0);
    if (first.runs.length !== runs || pending !== runs / 2) {
      throw new Error(
        `expected ${runs} runs and ${runs / 2} pending approvals, got ${first.runs.length} and ${pending}`,
      );
    }
    // The runs projection, initialised and caught up: view.runs answers from it.
    await initProjections({ db: target.db });
    await catchUpProjections({ db: target.db });
    const projected = await openView({ db: target.db });
    const bare = await target.bare();
    const fromProjection = await projected.runs({ limit: runs });
    const strip = (page: typeof first) =>
      JSON.stringify(page.runs.map(({ updatedAtMs: _u, ...run }) => run));
    if (strip(fromProjection) !== strip(first)) {
      throw new Error('the runs projection does not give the summaries the log gives');
    }
    const variants: Record<string, () => Promise<unknown>> = {
      'bare SELECT of the index page': bare.index,
      'bare SELECTs of the same rows (index, events, approval signals)': bare.same,
      'bare SELECT of the runs projection page (1,001 rows)': bare.projection,
      'view.runs({ limit: 1000 }), folding the logs': () => view.runs({ limit: runs }),
      'view.runs({ limit: 1000 }), from the current runs projection': () =>
        projected.runs({ limit: runs }),
    };
    const samples = new Map<string, number[]>(Object.keys(variants).map((n) => [n, []]));
    for (let round = 0; round < rounds; round += 1) {
      for (const [name, run] of Object.entries(variants)) {
        const started = performance.now();
        for (let i = 0; i < callsPerRound; i += 1) await run();
        samples.get(name)?.push((performance.now() - started) / callsPerRound);
      }
    }
    const index = median(samples.get('bare SELECT of the index page') ?? []);
    const same = median(
      samples.get('bare SELECTs of the same rows (index, events, approval signals)') ?? [],
    );
    for (const [name, xs] of samples) {
      const sorted = [...xs].sort((a, b) => a - b);
      console.log(
        `| ${target.name} | ${name} | ${median(xs).toFixed(2)} (${(sorted[0] ?? 0).toFixed(2)}..${(sorted[sorted.length - 1] ?? 0).toFixed(2)}) | ${(median(xs) / index).toFixed(2)} | ${(median(xs) / same).toFixed(2)} |`,
      );
    }
    await bare.close();
    await view.close();
    await projected.close();
  } finally {
    await target.drop();
  }
}
