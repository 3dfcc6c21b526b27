// The kill -9 campaign at a CI budget: 100 executions, 2 worker processes sharing one log, 5
// SIGKILLs, per backend. The full campaign (1,000 executions, 3 workers) is
// `pnpm --filter @loom/event-runtime campaign:kill`; its figures are in docs/reliability.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../support/throwaway-schemas.js';
import { runKillCampaign, summarize } from './kill-campaign.js';

const schemas = useThrowawaySchemas();
const directory = mkdtempSync(join(tmpdir(), 'loom-kill-campaign-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe.each(['sqlite', 'postgres'] as const)('kill -9 campaign on %s', (backend) => {
  it('100 executions, 2 workers, 5 SIGKILLs: nothing lost, nothing twice, re-runs within the work in flight', async () => {
    const seed = Number(process.env.LOOM_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(
      `kill campaign seed ${seed} (rerun: pnpm --filter @loom/event-runtime campaign:kill --backend ${backend} --execs 100 --workers 2 --kills 5 --concurrency 2 --kill-gap 50,250 --seed ${seed})`,
    );
    const report = await runKillCampaign({
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
      settleDeadlineMs: 90_000,
    });
    console.log(summarize(report));
    // The kills landed while work was in flight.
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
  }, 180_000);
});
