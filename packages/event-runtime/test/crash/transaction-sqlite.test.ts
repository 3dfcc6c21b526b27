import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';

const directory = mkdtempSync(join(tmpdir(), 'loom-tx-crash-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const worker = join(import.meta.dirname, 'transaction-worker.ts');

function runWorker(db: string, kill: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', worker, db, 'booking-1'], {
    env: { ...process.env, LOOM_TX_KILL: kill },
    encoding: 'utf8',
  });
}

function facts(db: string) {
  const raw = new Database(db, { readonly: true });
  const bookings = (raw.prepare('SELECT count(*) AS n FROM bookings').get() as { n: number }).n;
  const completions = raw
    .prepare(
      "SELECT payload FROM loom_events WHERE execution_id = 'booking-1' AND type = 'step.completed'",
    )
    .all()
    .map((row) => JSON.parse((row as { payload: string }).payload).name);
  raw.close();
  return { bookings, completions };
}

describe('ctx.transaction on SQLite: exactly once across a crash', () => {
  it('a kill inside the transaction leaves neither the row nor step.completed; the rerun writes both once', () => {
    const db = join(directory, 'inside.db');
    const crashed = runWorker(db, 'inside');
    expect(crashed.signal).toBe('SIGKILL');
    expect(facts(db)).toEqual({ bookings: 0, completions: ['quote'] });
    const resumed = runWorker(db, '');
    expect(resumed.status).toBe(0);
    expect(JSON.parse(resumed.stdout.trim())).toEqual({ result: 'booked 1' });
    expect(facts(db)).toEqual({ bookings: 1, completions: ['quote', 'book', 'confirm'] });
  });

  it('a kill right after the commit does not run the transaction again', () => {
    const db = join(directory, 'after.db');
    const crashed = runWorker(db, 'after');
    expect(crashed.signal).toBe('SIGKILL');
    expect(facts(db)).toEqual({ bookings: 1, completions: ['quote', 'book'] });
    const resumed = runWorker(db, '');
    expect(resumed.status).toBe(0);
    expect(JSON.parse(resumed.stdout.trim())).toEqual({ result: 'booked 1' });
    expect(facts(db)).toEqual({ bookings: 1, completions: ['quote', 'book', 'confirm'] });
  });
});
