// The full kill -9 campaign, on demand (not in CI):
//   pnpm --filter @loom/event-runtime campaign:kill [--backend sqlite|postgres|both]
//     [--execs 1000] [--workers 3] [--kills 50] [--concurrency 8] [--seed <n>] [--keep]
//     [--hand-off] (every worker starts with handOffStarts: its starts are run by whichever
//     worker's timer poll takes them)
// Prints the seed, a one-line repro, one summary line per backend and the per-kill figures,
// with the slowest execution of each kill that took longer than 5 s (--keep leaves the run's
// directory, with the workers' trace.log, and its Postgres schema, for reading them);
// exits 1 when any execution was lost, ended twice or wrong, or a transaction was re-applied,
// or the re-runs exceed their bound, or an execution a kill left was never recovered.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { type CampaignReport, runKillCampaign, summarize } from './kill-campaign.js';

const { values } = parseArgs({
  options: {
    backend: { type: 'string', default: 'both' },
    execs: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '3' },
    kills: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '8' },
    'kill-gap': { type: 'string', default: '200,1500' },
    seed: { type: 'string' },
    keep: { type: 'boolean', default: false },
    'hand-off': { type: 'boolean', default: false },
  },
});
const seed = Number(values.seed ?? Math.floor(Math.random() * 2 ** 31));
const backends = values.backend === 'both' ? ['sqlite', 'postgres'] : [values.backend as string];
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const args = `--backend ${values.backend} --execs ${values.execs} --workers ${values.workers} --kills ${values.kills} --concurrency ${values.concurrency}${values['hand-off'] === true ? ' --hand-off' : ''}`;
console.log(
  `kill campaign seed ${seed}; load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
);
console.log(`repro: pnpm --filter @loom/event-runtime campaign:kill ${args} --seed ${seed}`);

const failed = (report: CampaignReport) =>
  report.lost.length > 0 ||
  report.duplicateTerminals.length > 0 ||
  report.wrongOutputs.length > 0 ||
  report.duplicateCompletions.length > 0 ||
  report.missingEffects > 0 ||
  report.verifyFailures.length > 0 ||
  report.reapplied > 0 ||
  report.sideMissing.length > 0 ||
  report.killsNotRecovered > 0 ||
  report.reruns > report.rerunBound;

let bad = false;
for (const backend of backends) {
  const directory = mkdtempSync(join(tmpdir(), `loom-kill-campaign-${backend}-`));
  const schema = `loom_kill_campaign_${process.pid}_${Date.now().toString(36)}`;
  try {
    const report = await runKillCampaign({
      backend: backend as 'sqlite' | 'postgres',
      execs: Number(values.execs),
      workers: Number(values.workers),
      kills: Number(values.kills),
      concurrency: Number(values.concurrency),
      seed,
      handOffStarts: values['hand-off'] === true,
      killGapMs: String(values['kill-gap']).split(',').map(Number) as [number, number],
      restartDelayMs: [0, 500],
      directory,
      pgUrl,
      schema,
      log: (line) => console.log(line),
    });
    console.log(summarize(report));
    console.log(
      `per kill (owned/recover ms; 'ended at kill', 'not started' and 'not recovered' counted apart): ${report.kills
        .map(
          (kill) =>
            `${kill.owned}/${kill.recoverMs ?? 'not recovered'}` +
            (kill.endedAtKill.length > 0 ? ` (${kill.endedAtKill.length} ended at kill)` : '') +
            (kill.notStarted.length > 0 ? ` (${kill.notStarted.length} not started)` : ''),
        )
        .join(' ')}`,
    );
    for (const [index, kill] of report.kills.entries()) {
      if ((kill.recoverMs ?? 0) > 5_000) {
        console.log(`kill ${index + 1} took ${kill.recoverMs} ms: slowest ${kill.slowest}`);
      }
    }
    console.log(
      `load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    );
    if (failed(report)) {
      bad = true;
      console.log(JSON.stringify(report, null, 1));
    }
  } catch (error) {
    bad = true;
    console.log(`${backend}: the campaign broke off: ${(error as Error).stack ?? String(error)}`);
  } finally {
    if (values.keep === true) {
      console.log(`kept ${directory}${backend === 'postgres' ? ` and schema ${schema}` : ''}`);
    } else {
      // Workers of a broken-off run may still be writing there as they shut down.
      rmSync(directory, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    }
    if (backend === 'postgres' && values.keep !== true) {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
}
process.exit(bad ? 1 : 0);
