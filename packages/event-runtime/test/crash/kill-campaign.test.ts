// The kill -9 campaign at a CI budget: 100 executions, 2 worker processes sharing one log, 5
// SIGKILLs, per backend. The full campaign (1,000 executions, 3 workers) is
// `pnpm --filter @loom/event-runtime campaign:kill`; its figures are in docs/reliability.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killTestProcesses } from '../../src/testing.js';
import { pgTestUrl, useThrowawaySchemas } from '../support/throwaway-schemas.js';
import { type CampaignReport, runKillCampaign, summarize } from './kill-campaign.js';

const schemas = useThrowawaySchemas();
const directory = mkdtempSync(join(tmpdir(), 'loom-kill-campaign-'));
afterAll(async () => {
  await killTestProcesses();
  rmSync(directory, { recursive: true, force: true });
});

describe.each(['sqlite', 'postgres'] as const)('kill -9 campaign on %s', (backend) => {
  // Three steps, each within a test timeout: the workers boot, the kills land, then everything
  // settles and is checked.
  let kills: Promise<number> | undefined;
  let campaign: Promise<CampaignReport> | undefined;

  it('2 workers boot on one log of 100 executions', async () => {
    const seed = Number(process.env.LOOM_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(
      `kill campaign seed ${seed} (rerun: pnpm --filter @loom/event-runtime campaign:kill --backend ${backend} --execs 100 --workers 2 --kills 5 --concurrency 2 --kill-gap 50,250 --seed ${seed})`,
    );
    let killsDone: (kills: number) => void = () => {};
    kills = new Promise<number>((resolve) => {
      killsDone = resolve;
    });
    let workersReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      workersReady = resolve;
    });
    const running = runKillCampaign({
      backend,
      execs: 100,
      workers: 2,
      kills: 5,
      // Kills come 50-250 ms apart and each worker runs 2 at a time: on a quiet box the 100
      // executions take a few seconds, so all the kills land while work is in flight.
      concurrency: 2,
      seed,
      killGapMs: [50, 250],
      restartDelayMs: [0, 300],
      directory: join(directory, backend),
      pgUrl: pgTestUrl,
      schema: schemas.freshSchema(),
      settleDeadlineMs: 45_000,
      onWorkersReady: workersReady,
      onKillsDone: killsDone,
    });
    campaign = running;
    running.catch(() => undefined);
    // A run that fails early fails this test (and the next ones) with its error.
    await Promise.race([ready, running]);
  });

  it('the SIGKILLs land while work is in flight, and the killed workers come back', async () => {
    if (campaign === undefined || kills === undefined)
      throw new Error('nothing started (see the test before)');
    expect(await Promise.race([kills, campaign.then(() => -1)])).toBeGreaterThanOrEqual(3);
  });

  it('after the kills: nothing lost, nothing twice, re-runs within the work in flight', async () => {
    if (campaign === undefined) throw new Error('the campaign did not start (see the test before)');
    const report = await campaign;
    console.log(summarize(report));
    expect(report.kills.length).toBeGreaterThanOrEqual(3);
    expect(report.rerunBound).toBeGreaterThan(0);
    expect(report.lost).toEqual([]);
    expect(report.duplicateTerminals).toEqual([]);
    expect(report.wrongOutputs).toEqual([]);
    expect(report.duplicateCompletions).toEqual([]);
    expect(report.missingEffects).toBe(0);
    expect(report.verifyFailures).toEqual([]);
    expect(report.reapplied).toBe(0);
    expect(report.sideMissing).toEqual([]);
    expect(report.reruns).toBeLessThanOrEqual(report.rerunBound);
    expect(report.killsNotRecovered).toBe(0);
    expect(Number.isFinite(report.recoverP99Ms)).toBe(true);
  });
});
