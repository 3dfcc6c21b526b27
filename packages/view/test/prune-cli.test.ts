// `loom prune` and what `loom verify --all` means after it (ADR 0053): the CLI in process, with
// its own store, against a real SQLite file and a real Postgres schema populated by real flows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend, PrunedExecution } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunsPage, VerifyAllResult } from '../src/index.js';
import type { PruneOutcome } from '../src/internal/prune-runs.js';
import { loomInProcess, populate, runtimeOn } from './fixture.js';

const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const dir = mkdtempSync(join(tmpdir(), 'loom-view-prune-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Target {
  name: string;
  db: string;
  open(migrate: boolean): Promise<Backend>;
  drop(): Promise<void>;
  /** Edits a stored payload behind Loom's back (what `verify` must catch). */
  tamper(executionId: string, sequence: number): Promise<void>;
  /** The run ids in the projection tables. */
  projectedRuns(): Promise<string[]>;
}

const sqlitePath = join(dir, 'loom.db');
const pgSchema = `view_prune_${process.pid}`;
const targets: Target[] = [
  {
    name: 'sqlite',
    db: `sqlite:${sqlitePath}`,
    open: async (migrate) => openSqlite({ path: sqlitePath, migrate }),
    drop: async () => {},
    tamper: async (executionId, sequence) => {
      const db = new Database(sqlitePath);
      db.prepare(
        `UPDATE loom_events SET payload = '{"edited":true}' WHERE execution_id = ? AND sequence = ?`,
      ).run(executionId, sequence);
      db.close();
    },
    projectedRuns: async () => {
      const db = new Database(sqlitePath, { readonly: true });
      try {
        const rows = db.prepare('SELECT id FROM loom_projection_runs ORDER BY id').all();
        return (rows as Array<{ id: string }>).map((row) => row.id);
      } finally {
        db.close();
      }
    },
  },
  {
    name: 'postgres',
    db: `${pgUrl}?schema=${pgSchema}`,
    open: async (migrate) => {
      const { openPostgres } = await import('@loom/event-runtime/postgres');
      return openPostgres({ connectionString: pgUrl, schema: pgSchema, migrate });
    },
    drop: async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${pgSchema} CASCADE`);
      await client.end();
    },
    tamper: async (executionId, sequence) => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(
        `UPDATE ${pgSchema}.events SET payload = '{"edited":true}' WHERE execution_id = $1 AND sequence = $2`,
        [executionId, sequence],
      );
      await client.end();
    },
    projectedRuns: async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT id FROM ${pgSchema}.loom_projection_runs ORDER BY id COLLATE "C"`,
        );
        return (rows as Array<{ id: string }>).map((row) => row.id);
      } finally {
        await client.end();
      }
    },
  },
];

describe.each(targets)('loom prune on $name', (target) => {
  const env = () => ({ LOOM_DB: target.db });
  const json = async <T>(args: string[]): Promise<T> => {
    const out = await loomInProcess([...args, '--json'], env());
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    return JSON.parse(out.stdout) as T;
  };
  /** Settled runs and every run, as the index has them now. */
  let settled: string[] = [];
  let all: string[] = [];

  beforeAll(async () => {
    await target.drop();
    const backend = await target.open(true);
    const running = runtimeOn(backend);
    await populate(running, backend);
    const ids = async (status?: 'settled') =>
      (await backend.events.findExecutions(status === undefined ? {} : { status }))
        .map((row) => row.executionId)
        .sort();
    settled = await ids('settled');
    all = await ids();
    // Shutting the runtime down closes the backend it was given.
    await running.flows.shutdown();
  });
  afterAll(() => target.drop());

  it('a dry run removes nothing; prune removes the settled runs behind a receipt; verify --all stays green, lists the receipt, and still catches an edited kept run and an edited receipt', async () => {
    expect(settled.length).toBeGreaterThan(0);
    expect(settled.length).toBeLessThan(all.length);
    const endedBefore = new Date(Date.now() + 60_000).toISOString();
    const ids = (pruned: PrunedExecution[]) => pruned.map((row) => row.executionId).sort();

    expect((await loomInProcess(['projections', 'init'], env())).code).toBe(0);
    expect((await loomInProcess(['projections', 'run', '--once'], env())).code).toBe(0);
    expect(await target.projectedRuns()).toEqual(all);

    const dry = await json<PruneOutcome>(['prune', '--ended-before', endedBefore, '--dry-run']);
    expect(ids(dry.pruned)).toEqual(settled);
    expect(dry.receipts).toEqual([]);
    expect((await json<RunsPage>(['runs'])).runs).toHaveLength(all.length);

    const pruned = await json<PruneOutcome>(['prune', '--ended-before', endedBefore]);
    expect(ids(pruned.pruned)).toEqual(settled);
    expect(pruned.skipped).toEqual([]);
    expect(pruned.receipts).toEqual([0]);
    const kept = all.filter((id) => !settled.includes(id));
    expect((await json<RunsPage>(['runs'])).runs.map((run) => run.id).sort()).toEqual(kept);
    expect((await loomInProcess(['show', settled[0] as string], env())).code).toBe(3);
    // The projector drops the listed runs' rows at the receipt, and makes no run of the receipt log.
    expect((await loomInProcess(['projections', 'run', '--once'], env())).code).toBe(0);
    expect(await target.projectedRuns()).toEqual(kept);

    const verified = await loomInProcess(['verify', '--all'], env());
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(
      `ok: ${kept.length} executions; ${settled.length} pruned runs listed in 1 chained receipts`,
    );
    const verifiedJson = await loomInProcess(['verify', '--all', '--json'], env());
    expect(verifiedJson.code).toBe(0);
    expect(JSON.parse(verifiedJson.stdout) as VerifyAllResult).toEqual({
      checked: kept.length,
      broken: [],
      receipts: { events: 1, prunedRuns: settled.length },
    });
    expect(await json(['verify', 'loom.pruned'])).toMatchObject({ ok: true, events: 1 });
    // Nothing is left to prune: no second receipt.
    expect((await json<PruneOutcome>(['prune', '--ended-before', endedBefore])).receipts).toEqual(
      [],
    );

    const editedRun = kept[0] as string;
    await target.tamper(editedRun, 0);
    const afterEdit = await loomInProcess(['verify', '--all'], env());
    expect(afterEdit.code).toBe(1);
    expect(afterEdit.stdout).toContain(`BROKEN: ${editedRun} at sequence 0`);

    await target.tamper('loom.pruned', 0);
    const afterReceiptEdit = await loomInProcess(['verify', '--all'], env());
    expect(afterReceiptEdit.code).toBe(1);
    expect(afterReceiptEdit.stdout).toContain('BROKEN: loom.pruned at sequence 0');
    expect(afterReceiptEdit.stderr).toContain('2 broken');
  });

  it('bad options are usage errors (exit 2) that remove nothing', async () => {
    const before = (await json<RunsPage>(['runs'])).runs.length;
    expect((await loomInProcess(['prune'], env())).code).toBe(2);
    const vague = await loomInProcess(['prune', '--ended-before', 'last tuesday'], env());
    expect(vague.code).toBe(2);
    expect(vague.stderr).toContain('INVALID_ARGUMENT');
    expect(vague.stderr).toContain('30d');
    expect(
      (await loomInProcess(['prune', '--ended-before', '30d', '--batch', '0'], env())).code,
    ).toBe(2);
    expect(
      (await loomInProcess(['prune', '--ended-before', '30d', '--batch', '1001'], env())).code,
    ).toBe(2);
    expect((await json<RunsPage>(['runs'])).runs).toHaveLength(before);
  });
});
