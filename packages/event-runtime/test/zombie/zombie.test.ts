import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';

const url = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `loom_zombie_${process.pid}_${Date.now().toString(36)}`;
const worker = join(import.meta.dirname, 'zombie-worker.ts');
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

interface Node {
  child: ChildProcess;
  facts: Array<Record<string, unknown>>;
  waitFor(fact: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

function startNode(role: 'owner' | 'rescuer'): Node {
  const child = spawn(process.execPath, ['--import', 'tsx', worker], {
    env: {
      ...process.env,
      LOOM_ZOMBIE_ROLE: role,
      LOOM_ZOMBIE_SCHEMA: schema,
      LOOM_TEST_PG_URL: url,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const facts: Array<Record<string, unknown>> = [];
  let buffered = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      facts.push(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
    }
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return {
    child,
    facts,
    exited,
    waitFor: async (fact, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = facts.find((candidate) => candidate.fact === fact);
        if (found !== undefined) return found;
        if (Date.now() > deadline) throw new Error(`${role} never said ${fact}; stderr: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
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
  await owner.waitFor('effect-started');
  expect(await rowsOf('zombie-1')).toEqual(['execution.started', 'step.started']);
  owner.child.kill('SIGSTOP');
  // Let the 2 s lease run out while the owner is frozen: wait for its expiry, not for a while.
  await leaseExpired('zombie-1');
  const rescuer = startNode('rescuer');
  expect(await rescuer.waitFor('result')).toMatchObject({ result: 'rescued by rescuer' });
  await rescuer.exited;
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
  const aborted = await owner.waitFor('aborted');
  expect(String(aborted.reason)).toMatch(/lease|took it over/);
  // The zombie learns the outcome from the log; it wrote nothing of its own.
  expect(await owner.waitFor('result')).toMatchObject({ result: 'rescued by rescuer' });
  expect(await owner.exited).toBe(0);
  expect(await rowsOf('zombie-1')).toEqual(finished);
}, 60_000);
