// Run detail: is a materialised timeline worth keeping, against folding the run's log on each
// `view.show(id)`? On a SQLite file, for runs of 100, 1,000 and 5,000 completed steps, times
// side by side (interleaved per round): `view.show(id)` (index row, the log in pages, the inbox,
// the fold); the log read alone (`view.exportLog`, decoded); the fold alone (in memory); and a
// stand-in for a materialised timeline: one row per step (name, status, times, result JSON) in a
// table of its own, read with one prepared SELECT and its result JSON decoded.
// Run: pnpm --filter @loom/view exec tsx bench/run-detail.ts   (RUN_DETAIL_ROUNDS, default 9)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { EventEnvelope, StoredEvent } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import Database from 'better-sqlite3';
import { openView } from '../src/index.js';
import { foldRun } from '../src/internal/fold-run.js';

const sizes = [100, 1_000, 5_000];
const rounds = Number(process.env.RUN_DETAIL_ROUNDS ?? 9);
const dir = mkdtempSync(join(tmpdir(), 'loom-view-detail-'));
const path = join(dir, 'detail.db');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

try {
  const backend = openSqlite({ path, migrate: true, synchronous: 'NORMAL' });
  for (const steps of sizes) {
    const id = `detail-${steps}`;
    const at = Date.now();
    const events: EventEnvelope[] = [
      {
        executionId: id,
        sequence: 0,
        type: 'execution.started',
        payload: { flow: 'detail', version: null, input: { steps } },
        at,
      },
    ];
    for (let i = 0; i < steps; i += 1) {
      const step = { index: i, name: `step-${i}` };
      events.push({ executionId: id, sequence: 2 * i + 1, type: 'step.started', payload: step });
      events.push({
        executionId: id,
        sequence: 2 * i + 2,
        type: 'step.completed',
        payload: { ...step, result: { ok: true, n: i, note: 'a result of a few fields' } },
      });
    }
    events.push({
      executionId: id,
      sequence: 2 * steps + 1,
      type: 'execution.completed',
      payload: { output: 'done' },
    });
    for (let from = 0; from < events.length; from += 1_000) {
      await backend.events.append(events.slice(from, from + 1_000));
    }
  }
  await backend.close();

  // The stand-in timeline table: what a run-detail projection would keep, one row per step.
  const raw = new Database(path);
  raw.exec(`CREATE TABLE bench_timeline (
    run_id TEXT NOT NULL, idx INTEGER NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL,
    started_at_ms INTEGER, ended_at_ms INTEGER, result TEXT, PRIMARY KEY (run_id, idx)
  ) WITHOUT ROWID`);
  const insert = raw.prepare('INSERT INTO bench_timeline VALUES (?, ?, ?, ?, ?, ?, ?)');
  raw.transaction(() => {
    for (const steps of sizes) {
      for (let i = 0; i < steps; i += 1) {
        insert.run(`detail-${steps}`, i, `step-${i}`, 'completed', 1, 2, '{"ok":true}');
      }
    }
  })();
  const timeline = raw.prepare('SELECT * FROM bench_timeline WHERE run_id = ? ORDER BY idx');

  const view = await openView({ db: `sqlite:${path}`, useProjections: false });
  console.log(
    `Run detail on SQLite: ${rounds} rounds, variants interleaved, 3 calls each per round; ms per call, median (min..max)`,
  );
  console.log(
    '| Steps (events) | view.show(id) | log read alone (exportLog) | fold alone | materialised timeline stand-in (SELECT + JSON) |',
  );
  console.log('|---|---|---|---|---|');
  for (const steps of sizes) {
    const id = `detail-${steps}`;
    const log: StoredEvent[] = await view.exportLog(id);
    const variants: Record<string, () => Promise<unknown>> = {
      show: () => view.show(id),
      read: () => view.exportLog(id),
      fold: async () => foldRun(log, () => false),
      timeline: async () =>
        (timeline.all(id) as { result: string }[]).map((row) => JSON.parse(row.result)),
    };
    const samples = new Map<string, number[]>(Object.keys(variants).map((n) => [n, []]));
    for (let round = 0; round < rounds; round += 1) {
      for (const [name, run] of Object.entries(variants)) {
        const started = performance.now();
        for (let i = 0; i < 3; i += 1) await run();
        samples.get(name)?.push((performance.now() - started) / 3);
      }
    }
    const cell = (name: string) => {
      const xs = [...(samples.get(name) ?? [])].sort((a, b) => a - b);
      return `${median(xs).toFixed(2)} (${(xs[0] ?? 0).toFixed(2)}..${(xs[xs.length - 1] ?? 0).toFixed(2)})`;
    };
    console.log(
      `| ${steps.toLocaleString('en-US')} (${log.length.toLocaleString('en-US')}) | ${cell('show')} | ${cell('read')} | ${cell('fold')} | ${cell('timeline')} |`,
    );
  }
  await view.close();
  raw.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
