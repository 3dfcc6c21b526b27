// The dashboard's runs page over 100,000 runs (issue 30, item 6): view.searchRuns (the first page,
// a filtered page, a page deep in by cursor, the runs waiting for an approval) and view.runCounts
// (all, and of those waiting for an approval), each beside a bare SELECT of the
// same rows, on SQLite and Postgres, variants interleaved in each round.
// Run: pnpm --filter @loom/view exec tsx bench/runs-page.ts   (RUNS_PAGE_ROUNDS, default 15;
// RUNS_PAGE_RUNS, default 100,000). Postgres: LOOM_TEST_PG (default
// postgres://root@127.0.0.1:5432/test), a throwaway schema dropped at the end.
//
// Seeding: three real runs are recorded by the runtime (a completed 2-step `order`, a failed
// `charge`, a `waiter` suspended on a signal), then copied by one INSERT … SELECT per table under
// ids run-000000 … (every 20th failed, the next one waiting — for an approval, a question, a signal
// with a timeout or a child, by turns — the rest completed), created 25 s
// apart, last changed up to an hour after their creation (so the two orders differ). Copies keep
// the template's hashes: the view does not read them (`loom verify` would refuse these logs).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Backend } from '@loom/event-runtime';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openView, type RunSearchPage, type View } from '../src/index.js';
import { eventually, failing, order, runtimeOn, waiting } from '../test/fixture.js';

const runs = Number(process.env.RUNS_PAGE_RUNS ?? 100_000);
const rounds = Number(process.env.RUNS_PAGE_ROUNDS ?? 15);
const callsPerRound = 5;
const pageSize = 50;
const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const base = Date.UTC(2026, 10, 1);

/** Which template run `i` copies (an SQL expression over the series' `i`). */
const templateOf = (i: string) =>
  `CASE WHEN ${i} % 20 = 0 THEN 'seed-charge' WHEN ${i} % 20 = 1 THEN 'seed-wait' ELSE 'seed-order' END`;

/**
 * What a copied waiting run waits for (ADR 0062), by turns: an approval, a question, a signal with
 * a timeout, a child (`waiting_for` bits; NULL for the copies of runs that do not wait).
 */
const waitingOf = (i: string, template: string) =>
  `CASE WHEN ${template} IS NULL THEN NULL WHEN (${i} / 20) % 4 = 0 THEN 4 ` +
  `WHEN (${i} / 20) % 4 = 1 THEN 8 WHEN (${i} / 20) % 4 = 2 THEN 3 ELSE 16 END`;

/** A bare read: rows as the driver returns them, nothing decoded. */
type Bare = (sql: string, values?: unknown[]) => Promise<Array<Record<string, unknown>>>;

interface Target {
  name: string;
  db: string;
  open(): Promise<Backend>;
  /** Copies the templates to `runs` runs (SQL inside the database). */
  copy(): Promise<void>;
  bare(): Promise<{ query: Bare; plan(sql: string): Promise<string>; close(): Promise<void> }>;
  /** The table names and the `IN` test of a list of ids, in this dialect. */
  executions: string;
  events: string;
  inIds(ids: string[]): { sql: string; values: unknown[] };
  drop(): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), 'loom-view-runs-page-'));
const path = join(dir, 'runs-page.db');
const schema = `view_runs_page_bench_${process.pid}`;
const s = `"${schema}"`;

const targets: Target[] = [
  {
    name: 'SQLite',
    db: `sqlite:${path}`,
    open: async () => {
      const { openSqlite } = await import('@loom/event-runtime/sqlite');
      return openSqlite({ path, migrate: true, synchronous: 'NORMAL' });
    },
    copy: async () => {
      const db = new Database(path);
      const series = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${runs - 1})`;
      const id = "printf('run-%06d', n.i)";
      db.transaction(() => {
        db.exec(`${series}
          INSERT INTO loom_events (execution_id, sequence, type, payload, at, prev_hash, hash)
          SELECT ${id}, e.sequence, e.type, replace(e.payload, e.execution_id, ${id}),
                 e.at - t.at0 + ${base} + n.i * 25000, e.prev_hash, e.hash
          FROM n JOIN loom_events e ON e.execution_id = ${templateOf('n.i')}
          JOIN (SELECT execution_id, min(at) AS at0 FROM loom_events GROUP BY execution_id) t
            ON t.execution_id = e.execution_id`);
        db.exec(`${series}
          INSERT INTO loom_executions (execution_id, status, wake_at_ms, updated_at_ms, settled_as,
                                       flow, version, created_at_ms, started_by, waiting_for)
          SELECT ${id}, x.status, NULL, ${base} + n.i * 25000 + (n.i * 7919) % 3600000,
                 x.settled_as, x.flow, x.version, ${base} + n.i * 25000, NULL,
                 ${waitingOf('n.i', 'x.waiting_for')}
          FROM n JOIN loom_executions x ON x.execution_id = ${templateOf('n.i')}`);
      })();
      db.close();
    },
    bare: async () => {
      const raw = new Database(path, { readonly: true });
      const statements = new Map<string, Database.Statement>();
      const query: Bare = async (sql, values = []) => {
        let statement = statements.get(sql);
        if (statement === undefined) {
          statement = raw.prepare(sql);
          statements.set(sql, statement);
        }
        return statement.all(...values) as Array<Record<string, unknown>>;
      };
      return {
        query,
        plan: async (sql) =>
          (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>)
            .map((row) => row.detail)
            .join('; '),
        close: async () => {
          raw.close();
        },
      };
    },
    executions: 'loom_executions',
    events: 'loom_events',
    inIds: (ids) => ({ sql: 'IN (SELECT value FROM json_each(?))', values: [JSON.stringify(ids)] }),
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  },
  {
    name: 'Postgres',
    db: `${pgUrl}?schema=${schema}`,
    open: async () => {
      const { openPostgres } = await import('@loom/event-runtime/postgres');
      return openPostgres({ connectionString: pgUrl, schema, migrate: true });
    },
    copy: async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      const id = "'run-' || lpad(n.i::text, 6, '0')";
      await client.query(`
        INSERT INTO ${s}.events (execution_id, sequence, type, payload, at, prev_hash, hash)
        SELECT ${id}, e.sequence, e.type, replace(e.payload, e.execution_id, ${id}),
               e.at - t.at0 + ${base} + n.i * 25000, e.prev_hash, e.hash
        FROM generate_series(0::bigint, ${runs - 1}) AS n(i)
        JOIN ${s}.events e ON e.execution_id = ${templateOf('n.i')}
        JOIN (SELECT execution_id, min(at) AS at0 FROM ${s}.events GROUP BY execution_id) t
          ON t.execution_id = e.execution_id`);
      await client.query(`
        INSERT INTO ${s}.executions (execution_id, status, wake_at_ms, updated_at_ms, settled_as,
                                     flow, version, created_at_ms, started_by, waiting_for)
        SELECT ${id}, x.status, NULL, ${base} + n.i * 25000 + (n.i * 7919) % 3600000,
               x.settled_as, x.flow, x.version, ${base} + n.i * 25000, NULL,
               ${waitingOf('n.i', 'x.waiting_for')}
        FROM generate_series(0::bigint, ${runs - 1}) AS n(i)
        JOIN ${s}.executions x ON x.execution_id = ${templateOf('n.i')}`);
      // What autovacuum does shortly after a bulk load; without it the planner guesses.
      await client.query(`ANALYZE ${s}.events`);
      await client.query(`ANALYZE ${s}.executions`);
      await client.end();
    },
    bare: async () => {
      const pool = new pg.Pool({ connectionString: pgUrl, max: 1 });
      return {
        query: async (sql, values = []) => (await pool.query(sql, values)).rows,
        plan: async (sql) =>
          (await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`)).rows
            .map((row) => row['QUERY PLAN'].trim())
            .slice(0, 3)
            .join('; '),
        close: () => pool.end(),
      };
    },
    executions: `${s}.executions`,
    events: `${s}.events`,
    inIds: (ids) => ({ sql: '= ANY($1::text[])', values: [ids] }),
    drop: async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
      await client.end();
    },
  },
];

/** The three template runs, recorded by the runtime. */
async function recordTemplates(backend: Backend): Promise<void> {
  const running = runtimeOn(backend);
  try {
    await (await running.flows.start(order, { id: 's' }, { executionId: 'seed-order' })).result();
    await (await running.flows.start(failing, null, { executionId: 'seed-charge' }))
      .result()
      .catch(() => undefined);
    await running.flows.start(waiting, null, { executionId: 'seed-wait' });
    await eventually(async () => {
      const rows = await backend.events.findExecutions({ status: 'suspended' });
      return rows.some((row) => row.executionId === 'seed-wait') ? true : undefined;
    }, 'seed-wait suspended');
    await running.flows.idle();
  } finally {
    await running.flows.shutdown(); // closes `backend`
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const columns =
  'execution_id, status, settled_as, flow, version, started_by, wake_at_ms, waiting_for, created_at_ms, updated_at_ms';

console.log(
  `Runs page: ${runs.toLocaleString('en')} runs (+3 templates; 90 % completed 2-step flows, 5 % failed, 5 % suspended), ` +
    `pages of ${pageSize}; ${callsPerRound} calls per variant per round, ${rounds} rounds interleaved; ` +
    `load average before ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
);
console.log(
  '| Backend | Read | view, ms median (min..max) | bare SELECTs of the same rows, ms median (min..max) | view ÷ bare |',
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
    const seeded = performance.now();
    await recordTemplates(backend);
    await target.copy();
    const seedMs = performance.now() - seeded;
    const view: View = await openView({ db: target.db, useProjections: false });
    const bare = await target.bare();
    // The cursor 100 pages in (5,000 runs; half-way in a smaller seeding), found once.
    const depth = Math.min(100, Math.floor(runs / pageSize / 2));
    let deep: RunSearchPage = await view.searchRuns({ limit: pageSize });
    for (let i = 1; i < depth && deep.nextCursor !== null; i += 1) {
      deep = await view.searchRuns({ limit: pageSize, after: deep.nextCursor });
    }
    const deepCursor = deep.nextCursor as string;
    const deepLast = deep.runs[deep.runs.length - 1];
    if (deepLast === undefined) throw new Error('no deep page');
    const counts = await view.runCounts();
    if (counts.total !== runs + 3) throw new Error(`counted ${counts.total} runs`);

    const ph = (n: number) => (target.name === 'SQLite' ? '?' : `$${n}`);
    const pageSql = (where: string) =>
      `SELECT ${columns} FROM ${target.executions} x ${where} ` +
      `ORDER BY x.updated_at_ms DESC, x.execution_id DESC LIMIT ${pageSize + 1}`;
    /** The page's index rows, then those runs' events: what the view reads, bare. */
    const barePage = async (where: string, values: unknown[]) => {
      const rows = await bare.query(pageSql(where), values);
      const ids = rows.slice(0, pageSize).map((row) => String(row.execution_id));
      const list = target.inIds(ids);
      return bare.query(
        `SELECT * FROM ${target.events} WHERE execution_id ${list.sql} ORDER BY execution_id, sequence`,
        list.values,
      );
    };
    const approvalWhere = "WHERE x.status = 'suspended' AND (x.waiting_for & 4) <> 0";
    const approvals = await view.runCounts({ waiting: 'approval' });
    if (approvals.suspended !== Math.ceil((runs - 1) / 80)) {
      throw new Error(`counted ${approvals.suspended} runs waiting for an approval`);
    }
    const countsSql = `SELECT status, settled_as, count(*) AS n FROM ${target.executions} GROUP BY status, settled_as`;
    const variants: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
      [
        'first page, newest change first',
        () => view.searchRuns({ limit: pageSize }),
        () => barePage('', []),
      ],
      [
        'first page of failed runs',
        () => view.searchRuns({ status: 'failed', limit: pageSize }),
        () => barePage(`WHERE x.settled_as = ${ph(1)}`, ['failed']),
      ],
      [
        `page ${depth + 1} (after ${(depth * pageSize).toLocaleString('en')} runs, by cursor)`,
        () => view.searchRuns({ limit: pageSize, after: deepCursor }),
        () =>
          barePage(`WHERE (x.updated_at_ms, x.execution_id) < (${ph(1)}, ${ph(2)})`, [
            deepLast.updatedAtMs,
            deepLast.id,
          ]),
      ],
      ['counts per status', () => view.runCounts(), () => bare.query(countsSql)],
      [
        'first page waiting for an approval',
        () => view.searchRuns({ waiting: 'approval', limit: pageSize }),
        () => barePage(approvalWhere, []),
      ],
      [
        'counts of runs waiting for an approval',
        () => view.runCounts({ waiting: 'approval' }),
        () =>
          bare.query(
            `SELECT status, settled_as, count(*) AS n FROM ${target.executions} x ${approvalWhere} GROUP BY status, settled_as`,
          ),
      ],
    ];
    const samples = new Map<string, { view: number[]; bare: number[] }>(
      variants.map(([name]) => [name, { view: [], bare: [] }]),
    );
    const time = async (work: () => Promise<unknown>) => {
      const started = performance.now();
      for (let i = 0; i < callsPerRound; i += 1) await work();
      return (performance.now() - started) / callsPerRound;
    };
    for (let round = 0; round < rounds; round += 1) {
      for (const [name, viewRead, bareRead] of variants) {
        const sample = samples.get(name);
        // Alternate which goes first, so neither always reads a warmer cache.
        if (round % 2 === 0) {
          sample?.view.push(await time(viewRead));
          sample?.bare.push(await time(bareRead));
        } else {
          sample?.bare.push(await time(bareRead));
          sample?.view.push(await time(viewRead));
        }
      }
    }
    const range = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return `${median(xs).toFixed(2)} (${(sorted[0] ?? 0).toFixed(2)}..${(sorted[sorted.length - 1] ?? 0).toFixed(2)})`;
    };
    for (const [name, { view: v, bare: b }] of samples) {
      console.log(
        `| ${target.name} | ${name} | ${range(v)} | ${range(b)} | **${(median(v) / median(b)).toFixed(2)}** |`,
      );
    }
    console.log(
      `${target.name}: seeded in ${(seedMs / 1000).toFixed(1)} s; plan of the first page: ${await bare.plan(
        pageSql('').replace(`LIMIT ${pageSize + 1}`, `LIMIT ${pageSize + 1}`),
      )}; of the approvals page: ${await bare.plan(pageSql(approvalWhere))}`,
    );
    await bare.close();
    await view.close();
  } finally {
    await target.drop();
  }
}
console.log(
  `load average after ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
