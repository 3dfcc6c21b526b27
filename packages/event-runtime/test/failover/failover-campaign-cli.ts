// The failover campaign against an operator's own cluster (issue 32, item 4):
//   pnpm --filter @loom/event-runtime campaign:failover --url <multi-host URL> --kill-cmd '<command>'
//     [--execs 400] [--concurrency 8] [--kill-after 100] [--settle-s 300] [--force] [--keep]
// Two worker processes drive executions on --url (several hosts, target_session_attrs=read-write)
// in a schema of the run's own; once --kill-after executions have ended it runs --kill-cmd (a
// shell command that takes the primary down the way you want to rehearse: `pg_ctl stop -m
// immediate`, a `kill -9` over ssh, a cloud API call) and checks what the test checks. A
// throwaway database: it refuses one with tables of its own unless --force, and drops its schema
// at the end unless --keep. Exits 0 when every check passed, 1 when one failed, 2 on bad usage.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import {
  failuresOf,
  hostUrls,
  runFailoverCampaign,
  summarizeFailover,
  writableUrl,
} from './failover-campaign.js';

const usage =
  "usage: campaign:failover --url 'postgres://user@h1:p1,h2:p2/db?target_session_attrs=read-write' --kill-cmd '<shell command>' [--execs 400] [--concurrency 8] [--kill-after 100] [--settle-s 300] [--force] [--keep]";
let values: Record<string, string | boolean | undefined>;
try {
  values = parseArgs({
    options: {
      url: { type: 'string' },
      'kill-cmd': { type: 'string' },
      execs: { type: 'string', default: '400' },
      concurrency: { type: 'string', default: '8' },
      'kill-after': { type: 'string' },
      'settle-s': { type: 'string', default: '300' },
      force: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
    },
  }).values;
} catch (error) {
  console.error(`${(error as Error).message}\n${usage}`);
  process.exit(2);
}
const url = values.url as string | undefined;
const killCmd = values['kill-cmd'] as string | undefined;
const execs = Number(values.execs);
const concurrency = Number(values.concurrency);
const killAfter = Number(values['kill-after'] ?? Math.floor(execs / 4));
const settleMs = Number(values['settle-s']) * 1_000;
if (url === undefined || killCmd === undefined) {
  console.error(`--url and --kill-cmd are required\n${usage}`);
  process.exit(2);
}
if (
  ![execs, concurrency, killAfter, settleMs].every((n) => Number.isInteger(n) && n > 0) ||
  killAfter >= execs
) {
  console.error(
    `--execs, --concurrency, --kill-after (< --execs) and --settle-s must be positive integers\n${usage}`,
  );
  process.exit(2);
}
let hosts: string[];
try {
  hosts = hostUrls(url);
} catch (error) {
  console.error(`${(error as Error).message}\n${usage}`);
  process.exit(2);
}
if (hosts.length < 2)
  console.log(`note: --url names one host (${hosts[0]}): the workers can only come back to it`);

const primary = await writableUrl(url);
if (primary === undefined) {
  console.error(`no host of ${hosts.join(' ')} takes writes: is the cluster up?`);
  process.exit(2);
}
const check = new pg.Client({ connectionString: primary });
await check.connect();
const { rows } = await check.query(
  // Tables (not views) outside the system schemas and this campaign's own, and not an
  // extension's (pg_stat_statements and the like come with their own).
  `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'loom_failover_%'
      AND NOT EXISTS (SELECT 1 FROM pg_depend d
                       WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')`,
);
await check.end();
if ((rows[0]?.n ?? 0) > 0 && values.force !== true) {
  console.error(
    `the database at ${primary} has ${rows[0].n} tables of its own: the campaign wants a throwaway database (--force to run it there anyway; it writes only to a schema loom_failover_* of its own)`,
  );
  process.exit(2);
}

const schema = `loom_failover_${process.pid}_${Date.now().toString(36)}`;
const directory = mkdtempSync(join(tmpdir(), 'loom-failover-campaign-'));
console.log(
  `failover campaign: ${execs} executions, 2 workers on ${url}, schema ${schema}; the kill after ${killAfter} ended: ${killCmd}`,
);
let failed = true;
try {
  const report = await runFailoverCampaign({
    url,
    schema,
    execs,
    concurrency,
    directory,
    killAfterEnded: killAfter,
    kill: async () => {
      const { stdout, stderr } = await promisify(execFile)('sh', ['-c', killCmd], {
        timeout: 60_000,
      });
      // The times count from the command's return: it must return once the primary is down.
      const atMs = Date.now();
      if (stdout.trim() !== '' || stderr.trim() !== '')
        console.log(`kill command said: ${`${stdout}${stderr}`.trim()}`);
      return atMs;
    },
    settleDeadlineMs: settleMs,
    log: (line) => console.log(line),
  });
  console.log(summarizeFailover(report));
  const failures = failuresOf(report);
  for (const failure of failures) console.log(`FAILED: ${failure}`);
  failed = failures.length > 0;
} catch (error) {
  console.log(`the campaign broke off: ${(error as Error).stack ?? String(error)}`);
} finally {
  rmSync(directory, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  if (values.keep === true) console.log(`kept schema ${schema}`);
  else {
    const now = await writableUrl(url);
    if (now === undefined) console.log(`schema ${schema} not dropped: no host takes writes`);
    else {
      const client = new pg.Client({ connectionString: now });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
}
process.exit(failed ? 1 : 0);
