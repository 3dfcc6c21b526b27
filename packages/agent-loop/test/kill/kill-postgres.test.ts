import pg from 'pg';
import { afterAll, describe } from 'vitest';
import { killMatrix } from './kill-matrix.js';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const prefix = `loom_agent_kill_${process.pid}_${Date.now().toString(36)}`;
const schemas: string[] = [];

afterAll(async () => {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

describe.concurrent('kill matrix on Postgres', () => {
  killMatrix((name) => {
    const schema = `${prefix}_${name.replaceAll('-', '_')}`;
    schemas.push(schema);
    return { KILL_BACKEND: 'postgres', KILL_PG_URL: pgUrl, KILL_SCHEMA: schema };
  });
});
