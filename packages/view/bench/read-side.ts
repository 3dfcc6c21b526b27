// Read side: what a composed query costs through kysely vs the kernel's prepared statements, and
// where a `loom runs` page spends its time. Run: pnpm --filter @loom/view exec tsx bench/read-side.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openSqlite } from '@loom/event-runtime/sqlite';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { openView } from '../src/index.js';

const executions = 1_000;
const pageSize = 50;
const queriesPerRound = 200;
const rounds = 7;

interface Tables {
  loom_executions: {
    execution_id: string;
    status: string;
    settled_as: string | null;
    flow: string | null;
    version: string | null;
    created_at_ms: number;
    updated_at_ms: number;
  };
}

const dir = mkdtempSync(join(tmpdir(), 'loom-view-bench-'));
const path = join(dir, 'bench.db');
const backend = openSqlite({ path, migrate: true, synchronous: 'NORMAL' });
for (let i = 0; i < executions; i += 1) {
  const executionId = `run-${String(i).padStart(5, '0')}`;
  const settled = i % 2 === 0;
  await backend.events.append(
    [
      {
        executionId,
        sequence: 0,
        type: 'execution.started',
        payload: { flow: 'order', version: null, input: i },
      },
      { executionId, sequence: 1, type: 'step.started', payload: { index: 0, name: 'charge' } },
      ...(settled
        ? [
            {
              executionId,
              sequence: 2,
              type: 'step.completed',
              payload: { index: 0, name: 'charge', result: i },
            },
            { executionId, sequence: 3, type: 'execution.completed', payload: { output: i } },
          ]
        : []),
    ],
    { status: settled ? 'settled' : 'running' },
  );
}
await backend.close();

const raw = new Database(path, { readonly: true });
const kysely = new Kysely<Tables>({
  dialect: new SqliteDialect({ database: new Database(path, { readonly: true }) }),
});
const kernel = openSqlite({ path, readOnly: true });
const view = await openView({ db: `sqlite:${path}` });
const cursors = Array.from(
  { length: queriesPerRound },
  (_, i) => `run-${String((i * 7) % 900).padStart(5, '0')}`,
);
const rawSql =
  'SELECT execution_id, status, settled_as, flow, version, created_at_ms, updated_at_ms FROM loom_executions ' +
  'WHERE settled_as = ? AND execution_id > ? ORDER BY execution_id LIMIT ?';
const prepared = raw.prepare(rawSql);

const variants: Record<string, (cursor: string) => Promise<unknown>> = {
  'raw prepared (same SQL as kysely)': async (cursor) =>
    prepared.all('completed', cursor, pageSize),
  'kysely build + compile + run': (cursor) =>
    kysely
      .selectFrom('loom_executions')
      .select([
        'execution_id',
        'status',
        'settled_as',
        'flow',
        'version',
        'created_at_ms',
        'updated_at_ms',
      ])
      .where('settled_as', '=', 'completed')
      .where('execution_id', '>', cursor)
      .orderBy('execution_id')
      .limit(pageSize)
      .execute(),
  'kernel findExecutions': (cursor) =>
    kernel.events.findExecutions({
      status: 'completed',
      afterExecutionId: cursor,
      limit: pageSize,
    }),
  'view.runs (index + one log read per run)': (cursor) =>
    view.runs({ status: 'completed', after: cursor, limit: pageSize }),
};

const samples = new Map<string, number[]>(Object.keys(variants).map((name) => [name, []]));
for (let round = 0; round < rounds; round += 1) {
  for (const [name, run] of Object.entries(variants)) {
    const started = performance.now();
    for (const cursor of cursors) await run(cursor);
    samples.get(name)?.push(((performance.now() - started) * 1_000) / queriesPerRound);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const base = median(samples.get('raw prepared (same SQL as kysely)') ?? []);
console.log(
  `${executions} executions, pages of ${pageSize}, ${queriesPerRound} queries x ${rounds} rounds (interleaved)`,
);
for (const [name, xs] of samples) {
  const sorted = [...xs].sort((a, b) => a - b);
  console.log(
    `${name.padEnd(42)} median ${median(xs).toFixed(1)} µs/page (${(sorted[0] ?? 0).toFixed(1)}..${(sorted[sorted.length - 1] ?? 0).toFixed(1)})  x${(median(xs) / base).toFixed(2)}`,
  );
}
await view.close();
await kernel.close();
await kysely.destroy();
raw.close();
rmSync(dir, { recursive: true, force: true });
