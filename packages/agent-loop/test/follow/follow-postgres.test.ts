import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import pg from 'pg';
import { afterAll, describe, it } from 'vitest';
import { followByIdCase } from './follow-harness.js';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `loom_afollow_${process.pid}_${Date.now().toString(36)}`;

afterAll(async () => {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

describe('a second process follows a run by id, on Postgres', () => {
  it('gets the durable events from the log, then the live ones, in order, once each', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-agent-follow-pg-'));
    const store = await PostgresEventStore.open({ connectionString: pgUrl, schema });
    await store.migrate();
    try {
      await followByIdCase(
        store,
        { FOLLOW_BACKEND: 'postgres', FOLLOW_PG_URL: pgUrl, FOLLOW_SCHEMA: schema },
        dir,
      );
    } finally {
      await store.close();
    }
  });
});
