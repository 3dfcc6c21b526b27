// The schedule projection, and `loom runs` / `loom schedules` answering from the projection
// tables when they are initialised and current (else from the log), from the CLI (in process) on a
// real SQLite file and the real Postgres: the same answers both ways, idempotent on redelivery,
// caught up after a restart, and never read while the log is ahead of the checkpoint.
import type { Backend } from '@loom/event-runtime';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunsPage, ScheduleSummary } from '../src/index.js';
import { applyBatch, catchUpProjections } from '../src/index.js';
import { parseDbUrl } from '../src/internal/db-url.js';
import { openProjectionDb, type ProjectionDb } from '../src/projection/projection-db.js';
import { dbTargets, pgUrl } from './db-targets.js';
import { eventually, loomInProcess, populate, runtimeOn } from './fixture.js';
import { memoryProjectionDb, projectionRows, tableNames, wholeLog } from './projection-support.js';

const { targets, cleanup } = dbTargets('view-projreads');
afterAll(cleanup);

const tick = defineFlow({ name: 'tick' }, async (ctx) => ctx.step('tock', () => 'tocked'));

/**
 * Runs the every-second schedule on a backend of its own (its runtime's shutdown closes it) until
 * it has fired `times` more occurrences, then stops.
 */
async function fire(open: () => Promise<Backend>, times: number): Promise<void> {
  const backend = await open();
  const flows = createRuntime({ backend, flows: [tick], timerPollMs: 50 });
  try {
    const before = (await backend.events.findExecutions({ flow: 'tick', limit: 10_000 })).length;
    await flows.schedule(tick, '* * * * * *', { name: 'every-second' });
    await eventually(async () => {
      const done = await backend.events.findExecutions({
        flow: 'tick',
        status: 'completed',
        limit: 10_000,
      });
      return done.length >= before + times ? true : undefined;
    }, `${times} more fired occurrences`);
  } finally {
    await flows.shutdown();
  }
}

describe.each(targets)('loom runs and loom schedules over projections on $name', (target) => {
  const env = { LOOM_DB: target.db };
  const json = async <T>(args: string[]): Promise<T> => {
    const out = await loomInProcess([...args, '--json'], env);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    return JSON.parse(out.stdout) as T;
  };
  let backend: Backend;
  let writable: ProjectionDb;

  beforeAll(async () => {
    const populating = await target.open();
    const running = runtimeOn(populating);
    await populate(running, populating);
    await running.flows.shutdown(); // closes `populating`
    await fire(target.open, 2);
    backend = await target.open();
    await wholeLog(backend);
  });

  afterAll(async () => {
    await writable?.close();
    await backend?.close();
  });

  it('answer from the projection once it is current: the same runs and schedules as the log', async () => {
    const schedulesFromLog = await json<ScheduleSummary[]>(['schedules']);
    const runsFromLog = await json<RunsPage>(['runs', '--limit', '1000']);
    expect(schedulesFromLog.map((s) => s.name)).toEqual(['every-second']);
    expect(runsFromLog.runs.length).toBeGreaterThan(8);

    // Reading never created anything.
    const probe = await openProjectionDb(parseDbUrl(target.db), true);
    const names = await tableNames(probe);
    await probe.close();
    expect(names.filter((name) => name.startsWith('loom_projection'))).toEqual([]);

    expect((await loomInProcess(['projections', 'init'], env)).code).toBe(0);
    // Initialised but behind (position 0): still the log's answer, nothing read from the tables.
    expect(await json<ScheduleSummary[]>(['schedules'])).toEqual(schedulesFromLog);
    // Its SPEND column too: folded from the logs while the projection is behind.
    expect(await json<RunsPage>(['runs', '--limit', '1000'])).toEqual(runsFromLog);
    writable = await openProjectionDb(parseDbUrl(target.db), false);
    const once = await loomInProcess(['projections', 'run', '--once', '--json'], env);
    expect(once.code, once.stderr).toBe(0);

    expect(await json<ScheduleSummary[]>(['schedules'])).toEqual(schedulesFromLog);
    const projected = await json<RunsPage>(['runs', '--limit', '1000']);
    // updatedAtMs: the index's write time against the run's last event's time.
    const strip = (page: RunsPage) => page.runs.map(({ updatedAtMs: _u, ...run }) => run);
    expect(strip(projected)).toEqual(strip(runsFromLog));

    // Which path answered: a row changed in the projection table shows, while it is current.
    await writable.db
      .updateTable('loom_projection_schedules')
      .set({ timezone: 'Asia/Kolkata' })
      .execute();
    await writable.db
      .updateTable('loom_projection_runs')
      .set({ steps: 999 })
      .where('id', '=', 'order-7')
      .execute();
    const [schedule] = await json<ScheduleSummary[]>(['schedules']);
    expect(schedule?.timezone).toBe('Asia/Kolkata');
    const order = (await json<RunsPage>(['runs', '--flow', 'order'])).runs[0];
    expect(order?.steps).toBe(999);
  });

  it('read the log while it is ahead of the checkpoint; a restarted projector catches up', async () => {
    // The schedule fires again with no projector running: the projection is behind.
    await fire(target.open, 1);
    const log = await wholeLog(backend);
    const fromLog = await json<ScheduleSummary[]>(['schedules']);
    expect(fromLog[0]?.timezone).toBe('UTC');
    const runs = await json<RunsPage>(['runs', '--flow', 'order']);
    expect(runs.runs[0]?.steps).toBe(2);
    const ticks = await json<RunsPage>(['runs', '--flow', 'tick', '--limit', '1000']);

    // Put the tampered rows back as the log says, then restart the projector from its checkpoint.
    await writable.db.updateTable('loom_projection_schedules').set({ timezone: 'UTC' }).execute();
    await writable.db
      .updateTable('loom_projection_runs')
      .set({ steps: 2 })
      .where('id', '=', 'order-7')
      .execute();
    const resumed = await loomInProcess(['projections', 'run', '--once', '--json'], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    const stats = JSON.parse(resumed.stdout) as { delivered: number; position: number };
    expect(stats.delivered).toBeGreaterThan(0);
    expect(stats.delivered).toBeLessThan(log.length);
    expect(stats.position).toBe(log.at(-1)?.position);

    const caughtUp = await json<ScheduleSummary[]>(['schedules']);
    expect(caughtUp).toEqual(fromLog);
    expect(caughtUp[0]?.lastFiredAtMs).toBeGreaterThan(0);
    const projectedTicks = await json<RunsPage>(['runs', '--flow', 'tick', '--limit', '1000']);
    expect(projectedTicks.runs.map((r) => [r.id, r.status, r.steps])).toEqual(
      ticks.runs.map((r) => [r.id, r.status, r.steps]),
    );

    // The kept tables equal a rebuild from the whole log, in other batches.
    const kept = await projectionRows(writable);
    const fresh = await memoryProjectionDb();
    try {
      await catchUpProjections({ events: backend.events, projections: fresh, batchSize: 13 });
      expect(kept).toEqual(await projectionRows(fresh));
      expect(kept.schedules.length).toBeGreaterThanOrEqual(1);
    } finally {
      await fresh.close();
    }
  });

  it('a batch delivered twice gives the same rows (schedules included)', async () => {
    const log = await wholeLog(backend);
    const fresh = await memoryProjectionDb();
    try {
      expect(await applyBatch(fresh, log, 0)).toBe(log.length);
      const first = await projectionRows(fresh);
      expect(first.schedules).toHaveLength(1);
      expect(first.schedules[0]).toMatchObject({ name: 'every-second', expression: '* * * * * *' });
      // Not settled: it fires on (running between occurrences, or suspended on its timer).
      expect(['running', 'suspended']).toContain(first.schedules[0]?.status);
      expect(await applyBatch(fresh, log, log.at(-1)?.position as number)).toBe(0);
      expect(await projectionRows(fresh)).toEqual(first);
      expect(first).toEqual(await projectionRows(writable));
    } finally {
      await fresh.close();
    }
  });

  it('a write committed while another transaction on the server is still open takes the reads off the projection', async () => {
    const caughtUp = await loomInProcess(['projections', 'run', '--once'], env);
    expect(caughtUp.code, caughtUp.stderr).toBe(0);
    // Which path answers: a tampered projection row shows only while the projection is current.
    const tamper = (steps: number) =>
      writable.db
        .updateTable('loom_projection_runs')
        .set({ steps })
        .where('id', '=', 'order-7')
        .execute();
    await tamper(999);
    expect((await json<RunsPage>(['runs', '--flow', 'order'])).runs[0]?.steps).toBe(999);
    // On Postgres an open transaction anywhere on the server holds the log's commit-safe reading
    // order (readAll) back, so the write below is committed but not yet readable in that order:
    // the view must still see that the projection is behind.
    const holder =
      target.name === 'postgres' ? new pg.Client({ connectionString: pgUrl }) : undefined;
    try {
      if (holder !== undefined) {
        await holder.connect();
        await holder.query('BEGIN');
        await holder.query('SELECT pg_current_xact_id()');
      }
      await fire(target.open, 1);
      expect((await json<RunsPage>(['runs', '--flow', 'order'])).runs[0]?.steps).toBe(2);
    } finally {
      await holder?.query('ROLLBACK').catch(() => undefined);
      await holder?.end();
      await tamper(2);
    }
  });
});
