// A server restart under load, on a cluster of the test's own: every connection of the worker
// dies at once (fast shutdown), the server stays down for a while, then comes back. The worker
// must neither exit nor strand anything, and the transactional side effects stay exactly-once.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/postgres.js';
import { killTestProcesses } from '../../src/testing.js';
import { startThrowawayCluster, type ThrowawayCluster } from '../support/throwaway-cluster.js';
import { expectNothingStranded, resumedCount, waitForEvents } from './fault-checks.js';
import { runFaultWorker } from './fault-harness.js';

afterAll(killTestProcesses);

const execs = 200;
const schema = 'loom_restart';
let cluster: ThrowawayCluster;
let admin: pg.Pool;

beforeAll(async () => {
  cluster = await startThrowawayCluster();
  admin = new pg.Pool({ connectionString: cluster.url, max: 2 });
  admin.on('error', () => {});
  await migrate({ connectionString: cluster.url, schema });
  await admin.query(`CREATE TABLE "${schema}".fault_side (execution_id text PRIMARY KEY)`);
});

afterAll(async () => {
  await admin?.end();
  cluster?.destroy();
});

describe('a server restart', () => {
  it(`${execs} transactional executions survive a restart: no exit, none stranded`, async () => {
    const run = runFaultWorker({
      LOOM_FAULT_URL: cluster.url,
      LOOM_FAULT_SCHEMA: schema,
      LOOM_FAULT_EXECS: String(execs),
      LOOM_FAULT_MODE: 'transactional',
    });
    await waitForEvents(admin, schema, Math.floor(execs * 8 * 0.3), run.exited);
    cluster.stop();
    // Down long enough that every in-flight append and resume fails at least once.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    cluster.start();
    const exit = await run.exit;
    await expectNothingStranded(admin, schema, exit, execs);
    expect(await resumedCount(admin, schema)).toBeGreaterThan(0);
    const side = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".fault_side`);
    expect(side.rows[0].n).toBe(execs);
  });
});
