import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { killTestProcesses, spawnTestProcess } from '../../src/testing.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-tx-crash-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});
const worker = join(import.meta.dirname, 'transaction-worker.ts');

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schemas: string[] = [];
afterAll(async () => {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

interface Backend {
  name: string;
  /** A fresh target: a SQLite file, or a Postgres schema. */
  target(label: string): string;
  facts(target: string): Promise<{ bookings: number; completions: string[] }>;
}

const sqlite: Backend = {
  name: 'sqlite',
  target: (label) => join(directory, `${label}.db`),
  facts: async (db) => {
    const raw = new Database(db, { readonly: true });
    const bookings = (raw.prepare('SELECT count(*) AS n FROM bookings').get() as { n: number }).n;
    const completions = raw
      .prepare(
        "SELECT payload FROM loom_events WHERE execution_id = 'booking-1' AND type = 'step.completed' ORDER BY sequence",
      )
      .all()
      .map((row) => JSON.parse((row as { payload: string }).payload).name);
    raw.close();
    return { bookings, completions };
  },
};

const postgres: Backend = {
  name: 'postgres',
  target: (label) => {
    const schema = `loom_tx_${label}_${process.pid}_${Date.now().toString(36)}`;
    schemas.push(schema);
    return schema;
  },
  facts: async (schema) => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    const bookings = (await client.query(`SELECT count(*)::int AS n FROM "${schema}".bookings`))
      .rows[0].n;
    const completions = (
      await client.query(
        `SELECT payload FROM "${schema}".events WHERE execution_id = 'booking-1' AND type = 'step.completed' ORDER BY sequence`,
      )
    ).rows.map((row) => JSON.parse(row.payload).name);
    await client.end();
    return { bookings, completions };
  },
};

function runWorker(backend: Backend, target: string, kill: string) {
  return spawnTestProcess(worker, {
    args: [target, 'booking-1'],
    env: { LOOM_TX_KILL: kill, LOOM_TX_BACKEND: backend.name },
  }).ended();
}

for (const backend of [sqlite, postgres]) {
  describe(`ctx.transaction on ${backend.name}: exactly once across a crash`, () => {
    it('a kill inside the transaction leaves neither the row nor step.completed; the rerun writes both once', async () => {
      const target = backend.target('inside');
      const crashed = await runWorker(backend, target, 'inside');
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      expect(await backend.facts(target)).toEqual({ bookings: 0, completions: ['quote'] });
      const resumed = await runWorker(backend, target, '');
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout.trim())).toEqual({ result: 'booked 1' });
      expect(await backend.facts(target)).toEqual({
        bookings: 1,
        completions: ['quote', 'book', 'confirm'],
      });
    });

    it('a kill right after the commit does not run the transaction again', async () => {
      const target = backend.target('after');
      const crashed = await runWorker(backend, target, 'after');
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      expect(await backend.facts(target)).toEqual({ bookings: 1, completions: ['quote', 'book'] });
      const resumed = await runWorker(backend, target, '');
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout.trim())).toEqual({ result: 'booked 1' });
      expect(await backend.facts(target)).toEqual({
        bookings: 1,
        completions: ['quote', 'book', 'confirm'],
      });
    });
  });
}
