// What every fault test asserts at the end, read behind the runtime's back.
import type pg from 'pg';
import { expect } from 'vitest';
import type { FaultResult } from './fault-harness.js';

const terminalTypes = ['execution.completed', 'execution.failed', 'execution.cancelled'];

/** Events stored in `schema` so far. */
export async function eventCount(db: pg.Pool, schema: string): Promise<number> {
  const rows = await db.query(`SELECT count(*)::int AS n FROM "${schema}".events`);
  return rows.rows[0].n as number;
}

/**
 * Waits (deadline 30 s) until `schema` holds at least `events` events; fails at once when
 * `exited()` says the worker is gone.
 */
export async function waitForEvents(
  db: pg.Pool,
  schema: string,
  events: number,
  exited: () => boolean = () => false,
): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await eventCount(db, schema)) < events) {
    if (exited()) throw new Error(`the worker exited before ${schema} reached ${events} events`);
    if (Date.now() > deadline) throw new Error(`${schema} never reached ${events} events`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * 0 process exits, 0 stranded executions: the worker exited 0 after every handle settled with
 * the output, and the log holds exactly one terminal event for each of its executions.
 */
export async function expectNothingStranded(
  db: pg.Pool,
  schema: string,
  exit: { code: number | null; result: FaultResult | undefined; output: string },
  execs: number,
): Promise<void> {
  expect(exit.code, exit.output).toBe(0);
  expect(exit.result, exit.output).toMatchObject({
    execs,
    settled: execs,
    failed: 0,
    timedOut: false,
    stillRunning: 0,
  });
  const rows = await db.query(
    `SELECT execution_id, count(*) FILTER (WHERE type = ANY($1))::int AS terminals,
            bool_or(type = 'execution.completed') AS completed
       FROM "${schema}".events GROUP BY execution_id`,
    [terminalTypes],
  );
  expect(rows.rowCount).toBe(execs);
  const wrong = rows.rows.filter((row) => row.terminals !== 1 || row.completed !== true);
  expect(wrong).toEqual([]);
}

/**
 * Executions that were resumed from the log at least once (a resume advances the fence; a
 * start that never failed leaves no row): proof the faults hit executions in flight.
 */
export async function resumedCount(db: pg.Pool, schema: string): Promise<number> {
  const rows = await db.query(`SELECT count(*)::int AS n FROM "${schema}".fences`);
  return rows.rows[0].n as number;
}
