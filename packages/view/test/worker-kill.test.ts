// The worker kill campaign at a CI budget: 4 `loom worker` processes on one Postgres schema, 300
// three-step executions on a queue, a worker SIGKILLed every 0.4-1.2 s and restarted. The full
// run (2,000 executions, a kill every few seconds) is `pnpm --filter @loom/view campaign:workers`;
// its figures are in docs/reliability.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killTestProcesses } from '@loom/event-runtime/testing';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { pgUrl } from './db-targets.js';
import { describeFleet, type FleetReport, runWorkerFleet } from './worker/fleet.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-worker-kill-'));
const schema = `worker_kill_${process.pid}`;
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

describe('loom worker kill campaign on postgres', () => {
  // Three steps, each within a test timeout: the workers boot, the kills land, then everything
  // settles and is checked.
  let kills: Promise<number> | undefined;
  let fleet: Promise<FleetReport> | undefined;

  it('4 workers boot on one schema with 300 executions on a queue', async () => {
    const seed = Number(process.env.LOOM_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(
      `worker kill campaign seed ${seed} (rerun: pnpm --filter @loom/view campaign:workers --execs 300 --kills 6 --kill-gap 400,1200 --seed ${seed})`,
    );
    let killsDone: (kills: number) => void = () => {};
    kills = new Promise<number>((resolve) => {
      killsDone = resolve;
    });
    let workersReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      workersReady = resolve;
    });
    const running = runWorkerFleet({
      pgUrl,
      schema,
      execs: 300,
      workers: 4,
      kills: 6,
      seed,
      killGapMs: [400, 1_200],
      restartDelayMs: [0, 500],
      // Short, so a killed worker's work moves within the test's budget.
      leaseTtlMs: 2_000,
      concurrency: 8,
      stepMs: 30,
      directory,
      settleDeadlineMs: 45_000,
      onWorkersReady: workersReady,
      onKillsDone: killsDone,
      log: (line) => console.log(line),
    });
    fleet = running;
    running.catch(() => undefined);
    // A run that fails early fails this test (and the next ones) with its error.
    await Promise.race([ready, running]);
  });

  it('the SIGKILLs land while work is in flight, and the killed workers come back', async () => {
    if (fleet === undefined || kills === undefined)
      throw new Error('nothing started (see the test before)');
    expect(await Promise.race([kills, fleet.then(() => -1)])).toBeGreaterThanOrEqual(3);
  });

  it('after the kills: none lost, none ended twice, re-runs within the work held, every worker drains', async () => {
    if (fleet === undefined) throw new Error('the fleet did not start (see the test before)');
    const report = await fleet;
    console.log(describeFleet(report));
    expect(report.kills.length).toBeGreaterThanOrEqual(3);
    // The kills landed on work in flight.
    expect(report.rerunBound).toBeGreaterThan(0);
    expect(report.lost).toEqual([]);
    expect(report.duplicateTerminals).toEqual([]);
    expect(report.wrongOutputs).toEqual([]);
    expect(report.missingEffects).toBe(0);
    expect(report.queueNotDone).toBe(0);
    expect(report.reruns).toBeLessThanOrEqual(report.rerunBound);
    expect(report.drainExitCodes).toEqual([0, 0, 0, 0]);
  });
});
