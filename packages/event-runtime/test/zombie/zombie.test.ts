import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { killTestProcesses, spawnTestProcess, type TestProcess } from '../../src/testing.js';

const url = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `loom_zombie_${process.pid}_${Date.now().toString(36)}`;
const worker = join(import.meta.dirname, 'zombie-worker.ts');

afterAll(async () => {
  await killTestProcesses();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

function startNode(role: 'owner' | 'rescuer'): TestProcess {
  return spawnTestProcess(worker, {
    name: `the ${role}`,
    env: { LOOM_ZOMBIE_ROLE: role, LOOM_ZOMBIE_SCHEMA: schema, LOOM_TEST_PG_URL: url },
  });
}

/** Resolves once the lease of `executionId` has expired by the wall clock (deadline 10 s). */
async function leaseExpired(executionId: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const lease = await client.query(
        `SELECT expires_at_ms FROM "${schema}".leases WHERE execution_id = $1`,
        [executionId],
      );
      const expiresAtMs = Number(lease.rows[0]?.expires_at_ms ?? 0);
      if (Date.now() > expiresAtMs) return;
      if (Date.now() > deadline) throw new Error(`the lease of ${executionId} never expired`);
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(100, expiresAtMs - Date.now() + 1)),
      );
    }
  } finally {
    await client.end();
  }
}

async function rowsOf(executionId: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const rows = await client.query(
    `SELECT type FROM "${schema}".events WHERE execution_id = $1 ORDER BY sequence`,
    [executionId],
  );
  await client.end();
  return rows.rows.map((row) => row.type as string);
}

it('a zombie owner (SIGSTOP past its lease, then SIGCONT) appends nothing and sees its abort', async () => {
  const owner = startNode('owner');
  await owner.fact('effect-started');
  expect(await rowsOf('zombie-1')).toEqual(['execution.started', 'step.started']);
  owner.child.kill('SIGSTOP');
  // Let the 2 s lease run out while the owner is frozen: wait for its expiry, not for a while.
  await leaseExpired('zombie-1');
  const rescuer = startNode('rescuer');
  expect(await rescuer.fact('result')).toMatchObject({ result: 'rescued by rescuer' });
  await rescuer.ended();
  const finished = await rowsOf('zombie-1');
  expect(finished).toEqual([
    'execution.started',
    'step.started',
    // The rescuer found the owner's step in flight: one interruption (ADR 0031).
    'step.interrupted',
    'step.completed',
    'step.started',
    'step.completed',
    'execution.completed',
  ]);
  owner.child.kill('SIGCONT');
  const aborted = await owner.fact('aborted');
  expect(String(aborted.reason)).toMatch(/lease|took it over/);
  // The zombie learns the outcome from the log; it wrote nothing of its own.
  expect(await owner.fact('result')).toMatchObject({ result: 'rescued by rescuer' });
  expect((await owner.ended()).code).toBe(0);
  expect(await rowsOf('zombie-1')).toEqual(finished);
}, 60_000);
