// The full worker kill campaign, on demand (not in CI):
//   pnpm --filter @loom/view campaign:workers [--execs 2000] [--workers 4] [--kills 20]
//     [--kill-gap 2000,4000] [--lease-ttl 3000] [--concurrency 8] [--step-ms 20] [--seed <n>]
// Prints the seed, a one-line repro and the figures; exits 1 when an execution was lost, ended
// twice or wrong, an effect never ran, a queue item stayed undone, a drain did not exit 0, or the
// re-runs exceed their bound (the work the killed workers held).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { describeFleet, runWorkerFleet } from './fleet.js';

const { values } = parseArgs({
  options: {
    execs: { type: 'string', default: '2000' },
    workers: { type: 'string', default: '4' },
    kills: { type: 'string', default: '20' },
    'kill-gap': { type: 'string', default: '2000,4000' },
    'lease-ttl': { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '8' },
    'step-ms': { type: 'string', default: '20' },
    seed: { type: 'string' },
  },
});
const seed = Number(values.seed ?? Math.floor(Math.random() * 2 ** 31));
const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const pair = (text: string) => text.split(',').map(Number) as [number, number];
console.log(
  `worker kill campaign seed ${seed}; load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
);
console.log(
  `repro: pnpm --filter @loom/view campaign:workers --execs ${values.execs} --workers ${values.workers} ` +
    `--kills ${values.kills} --kill-gap ${values['kill-gap']} --lease-ttl ${values['lease-ttl']} ` +
    `--concurrency ${values.concurrency} --step-ms ${values['step-ms']} --seed ${seed}`,
);
const directory = mkdtempSync(join(tmpdir(), 'loom-worker-fleet-'));
const schema = `loom_worker_fleet_${process.pid}`;
let failed = true;
try {
  const report = await runWorkerFleet({
    pgUrl,
    schema,
    execs: Number(values.execs),
    workers: Number(values.workers),
    kills: Number(values.kills),
    seed,
    killGapMs: pair(String(values['kill-gap'])),
    restartDelayMs: [0, 1_000],
    leaseTtlMs: Number(values['lease-ttl']),
    concurrency: Number(values.concurrency),
    stepMs: Number(values['step-ms']),
    directory,
    settleDeadlineMs: 600_000,
    log: (line) => console.log(line),
  });
  console.log(describeFleet(report));
  failed =
    report.lost.length > 0 ||
    report.duplicateTerminals.length > 0 ||
    report.wrongOutputs.length > 0 ||
    report.missingEffects > 0 ||
    report.queueNotDone > 0 ||
    report.drainExitCodes.some((code) => code !== 0) ||
    report.reruns > report.rerunBound;
} finally {
  rmSync(directory, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}
process.exitCode = failed ? 1 : 0;
