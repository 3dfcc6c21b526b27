import pg from 'pg';
import { afterAll, describe } from 'vitest';
import { killMatrix } from './kill-matrix.js';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
// Schema names are at most 40 characters: a short prefix, the pid, and a counter per case.
const prefix = `loom_akill_${process.pid}_${Date.now().toString(36)}`;
const schemas: string[] = [];

afterAll(async () => {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

describe.concurrent('kill matrix on Postgres', () => {
  killMatrix(() => {
    const schema = `${prefix}_${schemas.length}`;
    schemas.push(schema);
    return { KILL_BACKEND: 'postgres', KILL_PG_URL: pgUrl, KILL_SCHEMA: schema };
  });
});
