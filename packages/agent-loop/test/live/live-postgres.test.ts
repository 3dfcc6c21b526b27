import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgres } from '@loom/event-runtime/postgres';
import { killTestProcesses } from '@loom/event-runtime/testing';
import pg from 'pg';
import { afterAll, afterEach, describe, it } from 'vitest';
import { liveAcrossWorkersCase } from './live-harness.js';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `loom_alive_${process.pid}_${Date.now().toString(36)}`;

afterEach(killTestProcesses);
afterAll(async () => {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

describe('text across workers (ADR 0050), on Postgres', () => {
  it("a follower in a third process gets every piece of the resuming worker's answer once, in order, across a reconnect", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-agent-live-pg-'));
    await liveAcrossWorkersCase(
      async () => openPostgres({ connectionString: pgUrl, schema, migrate: true }),
      { LIVE_BACKEND: 'postgres', LIVE_PG_URL: pgUrl, LIVE_SCHEMA: schema },
      dir,
    );
  });
});
