// The crash-point enumeration, on demand, with its progress printed:
//   pnpm --filter @loom/event-runtime crash:points [--backend sqlite|postgres]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { runCrashPoints } from './crash-point-run.js';

const { values } = parseArgs({ options: { backend: { type: 'string', default: 'sqlite' } } });
const backend = values.backend as 'sqlite' | 'postgres';
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const directory = mkdtempSync(join(tmpdir(), `loom-crash-points-${backend}-`));
const schema = `loom_crash_points_${process.pid}_${Date.now().toString(36)}`;
let bad = false;
try {
  const outcomes = await runCrashPoints(backend, directory, pgUrl, schema, (line) =>
    console.log(line),
  );
  for (const outcome of outcomes) {
    bad ||= !outcome.died || outcome.wrong.length > 0;
    console.log(
      `| ${outcome.point} | ${backend} | ${outcome.died ? 'died' : 'NOT REACHED'} | ${outcome.reruns} | ${outcome.wrong.length === 0 ? 0 : outcome.wrong.join('; ')} |`,
    );
  }
} finally {
  rmSync(directory, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  if (backend === 'postgres') {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}
process.exit(bad ? 1 : 0);
