import pg from 'pg';
import { afterAll } from 'vitest';
import { PostgresEventStore } from '../../src/postgres.js';
import { pgTestUrl } from '../support/throwaway-schemas.js';
import { crashScenario } from './crash-scenario.js';

const schema = `loom_crash_${process.pid}_${Date.now().toString(36)}`;
afterAll(async () => {
  const client = new pg.Client({ connectionString: pgTestUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

crashScenario(
  'postgres',
  () => ({
    LOOM_CRASH_BACKEND: 'postgres',
    LOOM_CRASH_PG_URL: pgTestUrl,
    LOOM_CRASH_SCHEMA: schema,
  }),
  () => PostgresEventStore.open({ connectionString: pgTestUrl, schema, readOnly: true }),
);
