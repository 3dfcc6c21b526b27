// A user of the durable stores, in plain Node ESM, with pg and better-sqlite3 installed: the
// SQLite and Postgres entries load and one flow runs on each, on a real SQLite file and on the
// local PostgreSQL (a throwaway schema, dropped at the end).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { openPostgres } from '@loom/workflow-runtime/postgres';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import pg from 'pg';

const check = (ok, what) => {
  if (!ok) throw new Error(`pack-install durable: ${what}`);
};

const greet = defineFlow({ name: 'greet' }, async (ctx, input) =>
  ctx.step('shout', () => `${input.name.toUpperCase()}!`),
);
async function runOn(backend, what) {
  const runtime = createRuntime({ backend, closeBackend: false, flows: [greet] });
  const handle = await runtime.start(greet, { name: what }, { executionId: `greet-${what}` });
  const result = await handle.result();
  await runtime.shutdown();
  check(
    result === `${what.toUpperCase()}!`,
    `${what}: the flow returned ${JSON.stringify(result)}`,
  );
  const events = await backend.events.read(`greet-${what}`);
  check(events.length === 4, `${what}: ${events.length} events in the log, expected 4`);
}

const dir = mkdtempSync(join(tmpdir(), 'loom-pack-sqlite-'));
try {
  const sqlite = openSqlite({ path: join(dir, 'loom.db'), migrate: true });
  try {
    await runOn(sqlite, 'sqlite');
  } finally {
    await sqlite.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const url = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `loom_pack_${process.pid}_${Date.now()}`;
try {
  const backend = await openPostgres({ connectionString: url, schema, migrate: true });
  try {
    await runOn(backend, 'postgres');
  } finally {
    await backend.close();
  }
} finally {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}
console.log('pack-install durable: ok (one flow on a SQLite file, one on Postgres)');
