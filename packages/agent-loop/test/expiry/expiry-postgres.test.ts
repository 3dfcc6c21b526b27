// A decision at or after an approval's expiry never lets the call run, on Postgres.
import { openPostgres } from '@loom/workflow-runtime/postgres';
import pg from 'pg';
import { afterAll, describe, it } from 'vitest';
import {
  decisionStampedLateExpires,
  lateApproveRefused,
  lateSignalExpires,
  type OpenBackend,
} from './expiry-harness.js';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `loom_aexpiry_${process.pid}_${Date.now().toString(36)}`;
const open: OpenBackend = (clock) =>
  openPostgres({ connectionString: pgUrl, schema, migrate: true, clock });

afterAll(async () => {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

describe('an approval decided at or after its expiry, no worker alive (Postgres)', () => {
  it('approve() and reject() at the expiry are refused with APPROVAL_EXPIRED, nothing is written, the run ends approval_expired', async () => {
    await lateApproveRefused(open, 'late-approve');
  });

  it('a decision signal sent after the expiry ends the run approval_expired; the tool never runs', async () => {
    await lateSignalExpires(open, 'late-signal');
  });

  it('a decision in the inbox before the expiry but stamped at it counts as expired', async () => {
    await decisionStampedLateExpires(open, 'stamped-late');
  });
});
