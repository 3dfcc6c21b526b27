// A parent agent whose tool runs a child agent, SIGKILLed (a real process) in the child's tool
// and after the parent recorded the child's result. A second process finishes the run: the
// child run was started once (one child.started in the parent's log, one execution.started in
// the child's), its result is what the parent observed, and nothing already recorded ran again.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventStore, EventType } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { killTestProcesses } from '@loom/event-runtime/testing';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { life } from '../kill/kill-harness.js';

const worker = join(import.meta.dirname, 'agent-tool-worker.ts');
const dir = mkdtempSync(join(tmpdir(), 'loom-agent-tool-kill-'));
const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schemaPrefix = `h_agent_iso_atk_${process.pid}_${Date.now().toString(36)}`;
const schemas: string[] = [];

afterAll(async () => {
  await killTestProcesses();
  if (schemas.length === 0) return;
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

interface Backend {
  /** Names the case's files. */
  tag: string;
  /** The worker's environment for one case's store. */
  env(name: string): Record<string, string>;
  open(env: Record<string, string>): Promise<EventStore>;
}

const backends: [string, Backend][] = [
  [
    'a SQLite file',
    {
      tag: 'sqlite',
      env: (name) => ({ AT_BACKEND: 'sqlite', AT_DB: join(dir, `${name}.db`) }),
      open: async (env) => SqliteEventStore.open({ path: env.AT_DB as string, migrate: true }),
    },
  ],
  [
    'Postgres',
    {
      tag: 'pg',
      env: () => {
        const schema = `${schemaPrefix}_${schemas.length}`;
        schemas.push(schema);
        return { AT_BACKEND: 'postgres', AT_PG_URL: pgUrl, AT_SCHEMA: schema };
      },
      open: (env) =>
        PostgresEventStore.open({
          connectionString: env.AT_PG_URL as string,
          schema: env.AT_SCHEMA as string,
        }),
    },
  ],
];

function lines(file: string): number {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
}

describe.concurrent.each(backends)('agent tools across a SIGKILL, on %s', (_backend, backend) => {
  it.each([
    // Killed inside the child's read_only tool: the tool runs again, the child's first answer is replayed.
    { killAt: 'child_tool', lookups: 2, modelCalls: 2 },
    // Killed once the parent recorded the child's result: the child is not run again at all.
    { killAt: 'parent_observed', lookups: 1, modelCalls: 2 },
    // Killed once the parent's child.started is durable, before the child's own start: the
    // replayed parent starts the child (idempotent on its id), which runs once.
    { killAt: 'child_recorded', lookups: 1, modelCalls: 2 },
  ])('killed at $killAt: the child is started once and its result observed', async (c) => {
    const runId = `boss-${c.killAt}`;
    const env = {
      ...backend.env(`${backend.tag}-${c.killAt}`),
      AT_RUN_ID: runId,
      AT_LOOKUPS: join(dir, `${backend.tag}-${c.killAt}.lookups`),
      AT_MODEL_CALLS: join(dir, `${backend.tag}-${c.killAt}.model-calls`),
    };
    const first = await life({ ...env, AT_KILL: c.killAt }, worker);
    expect(first.signal, first.output).toBe('SIGKILL');
    const second = await life(env, worker);
    expect(second.code, second.output).toBe(0);
    expect(second.line?.kind).toBe('result');
    const result = second.line?.value as { reason: string; output: string };
    expect(result.reason).toBe('goal_completed');
    expect(result.output).toContain('A loom weaves threads.');
    expect(result.output).toContain(`${runId}/1.0`);

    expect(lines(env.AT_LOOKUPS)).toBe(c.lookups);
    expect(lines(env.AT_MODEL_CALLS)).toBe(c.modelCalls);
    const store = await backend.open(env);
    try {
      const parent = await store.read(runId);
      expect(parent.filter((e) => e.type === EventType.childStarted)).toHaveLength(1);
      const child = await store.read(`${runId}/1.0`);
      expect(child.filter((e) => e.type === EventType.executionStarted)).toHaveLength(1);
      expect(child.at(-1)?.type).toBe(EventType.executionCompleted);
    } finally {
      await store.close();
    }
  });
});
