// The `loom` command against a real SQLite file and a real Postgres schema populated by real
// flows and an agent run waiting for approval. What a command prints and does to the store runs
// in this process (`loomInProcess`: the CLI itself, no node start-up per call); the built binary
// runs as a child process where the process is the subject: its exit codes and typed errors on
// stderr, `tail` kept alive until the run ends, an unreachable database that must not crash it.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Approval } from '@loom/agent-loop';
import type { Backend, StoredEvent } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunDetail, RunSummary, RunsPage } from '../src/index.js';
import { loom, loomInProcess, populate, runtimeOn, sentMails } from './fixture.js';

const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const dir = mkdtempSync(join(tmpdir(), 'loom-view-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Target {
  name: string;
  db: string;
  open(migrate: boolean): Promise<Backend>;
  drop(): Promise<void>;
  /** Edits a stored payload behind Loom's back (what `verify` must catch). */
  tamper(executionId: string, sequence: number): Promise<void>;
}

const sqlitePath = join(dir, 'loom.db');
const pgSchema = `view_cli_${process.pid}`;
const targets: Target[] = [
  {
    name: 'sqlite',
    db: `sqlite:${sqlitePath}`,
    open: async (migrate) => openSqlite({ path: sqlitePath, migrate }),
    drop: async () => {},
    tamper: async (executionId, sequence) => {
      const db = new Database(sqlitePath);
      db.prepare(
        `UPDATE loom_events SET payload = '{"edited":true}' WHERE execution_id = ? AND sequence = ?`,
      ).run(executionId, sequence);
      db.close();
    },
  },
  {
    name: 'postgres',
    db: `${pgUrl}?schema=${pgSchema}`,
    open: async (migrate) => {
      const { openPostgres } = await import('@loom/event-runtime/postgres');
      return openPostgres({ connectionString: pgUrl, schema: pgSchema, migrate });
    },
    drop: async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${pgSchema} CASCADE`);
      await client.end();
    },
    tamper: async (executionId, sequence) => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(
        `UPDATE ${pgSchema}.events SET payload = '{"edited":true}' WHERE execution_id = $1 AND sequence = $2`,
        [executionId, sequence],
      );
      await client.end();
    },
  },
];

describe.each(targets)('loom on $name', (target) => {
  const env = () => ({ LOOM_DB: target.db });
  const json = async <T>(args: string[]): Promise<T> => {
    const out = await loomInProcess([...args, '--json'], env());
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    return JSON.parse(out.stdout) as T;
  };

  beforeAll(async () => {
    await target.drop();
    const backend = await target.open(true);
    const running = runtimeOn(backend);
    await populate(running, backend);
    await running.flows.shutdown();
  });
  afterAll(() => target.drop());

  it('runs lists every execution from the index, with status, steps, reason and pending approvals', async () => {
    const page = await json<RunsPage>(['runs']);
    const byId = new Map(page.runs.map((r) => [r.id, r]));
    expect([...byId.keys()].sort()).toEqual(
      [
        'agent-1',
        'charge-1',
        'order-7',
        'parent-1',
        'parent-1.0',
        'wait-cancel',
        'wait-signal',
      ].sort(),
    );
    expect(byId.get('order-7')).toMatchObject({
      kind: 'flow',
      flow: 'order',
      version: '2',
      status: 'completed',
      steps: 2,
      terminalReason: 'completed',
      pendingApprovals: 0,
    });
    expect(byId.get('charge-1')?.status).toBe('failed');
    expect(byId.get('charge-1')?.terminalReason).toContain('card declined');
    expect(byId.get('wait-signal')).toMatchObject({
      status: 'suspended',
      steps: 1,
      terminalReason: null,
      waitingFor: "signal 'go'",
    });
    expect(byId.get('agent-1')).toMatchObject({
      kind: 'agent',
      agent: 'mailer',
      flow: 'agent:mailer',
      status: 'suspended',
      pendingApprovals: 1,
    });
    const created = byId.get('order-7') as RunSummary;
    expect(created.updatedAtMs).toBeGreaterThanOrEqual(created.createdAtMs);
  });

  it('runs filters by status and flow, pages with a cursor, and prints a table for people', async () => {
    expect((await json<RunsPage>(['runs', '--status', 'failed'])).runs.map((r) => r.id)).toEqual([
      'charge-1',
    ]);
    expect((await json<RunsPage>(['runs', '--flow', 'waiter'])).runs.map((r) => r.id)).toEqual([
      'wait-cancel',
      'wait-signal',
    ]);
    const first = await json<RunsPage>(['runs', '--limit', '2']);
    expect(first.runs.map((r) => r.id)).toEqual(['agent-1', 'charge-1']);
    expect(first.nextCursor).toBe('charge-1');
    const second = await json<RunsPage>(['runs', '--limit', '2', '--after', 'charge-1']);
    expect(second.runs.map((r) => r.id)).toEqual(['order-7', 'parent-1']);
    const table = await loomInProcess(['runs', '--status', 'completed'], env());
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('order-7');
    expect(table.stdout).toContain('STATUS');
    expect(table.stdout).not.toContain('charge-1');
  });

  it('runs --waiting lists the suspended runs that wait for that kind, and its next page repeats it', async () => {
    const ids = async (kind: string) =>
      (await json<RunsPage>(['runs', '--waiting', kind])).runs.map((r) => r.id).sort();
    expect(await ids('approval')).toEqual(['agent-1']);
    expect(await ids('signal')).toEqual(['wait-cancel', 'wait-signal']);
    expect(await ids('child')).toEqual([]);
    expect(await ids('question')).toEqual([]);
    const input = await ids('input');
    expect(input).toEqual([...new Set([...input, 'agent-1', 'wait-signal'])].sort());
    const first = await json<RunsPage>(['runs', '--waiting', 'input', '--limit', '1']);
    expect(first.runs).toHaveLength(1);
    const next = await json<RunsPage>([
      'runs',
      '--waiting',
      'input',
      '--limit',
      '1',
      '--after',
      first.nextCursor as string,
    ]);
    expect(next.runs.map((r) => r.id)).not.toContain(first.runs[0]?.id);
    const table = await loomInProcess(['runs', '--waiting', 'input', '--limit', '1'], env());
    expect(table.stdout).toContain(`more: loom runs --waiting input --after ${first.nextCursor}`);
    const bad = await loomInProcess(['runs', '--waiting', 'sleep'], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('one of timer, signal, approval, question, child, input');
  });

  it('show gives a flow timeline with durations, and children', async () => {
    const order = await json<RunDetail>(['show', 'order-7']);
    expect(order.timeline.map((e) => [e.kind, e.name, e.status])).toEqual([
      ['step', 'price', 'completed'],
      ['step', 'receipt', 'completed'],
    ]);
    for (const entry of order.timeline)
      expect(entry.durationMs).toBe((entry.endedAtMs ?? 0) - entry.startedAtMs);
    expect(order.output).toEqual({ id: '7', total: 42, paid: true });
    expect(order.input).toEqual({ id: '7' });
    expect(order.events).toBe(6);
    const parent = await json<RunDetail>(['show', 'parent-1']);
    expect(parent.timeline).toEqual([
      expect.objectContaining({
        kind: 'child',
        childId: 'parent-1.0',
        status: 'completed',
        result: 42,
      }),
    ]);
    expect((await json<RunDetail>(['show', 'parent-1.0'])).parentId).toBe('parent-1');
    const waiting = await json<RunDetail>(['show', 'wait-signal']);
    expect(waiting.timeline.map((e) => [e.kind, e.name, e.status])).toEqual([
      ['step', 'prepare', 'completed'],
      ['wait', 'go', 'open'],
    ]);
  });

  it("show gives an agent run's decisions, policy verdicts and approvals", async () => {
    const detail = await json<RunDetail>(['show', 'agent-1']);
    const roles = detail.timeline.map((e) => e.agentRole);
    expect(roles.slice(0, 3)).toEqual(['decision', 'policy', 'approval']);
    expect(detail.timeline[0]?.result).toMatchObject({
      toolCalls: [expect.objectContaining({ tool: 'send_mail' })],
    });
    expect(detail.approvals).toEqual([
      expect.objectContaining({ runId: 'agent-1', status: 'pending', kind: 'tool_call' }),
    ]);
    const human = await loomInProcess(['show', 'agent-1'], env());
    expect(human.stdout).toContain('waiting for: approval agent-1~1.0');
    expect(human.stdout).toContain('decision');
    expect(human.stdout).toContain('send_mail');
  });

  it('events prints the log in sequence order', async () => {
    const events = await json<StoredEvent[]>(['events', 'order-7']);
    expect(events.map((e) => e.sequence)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(events[0]?.type).toBe('execution.started');
    expect(events[5]?.type).toBe('execution.completed');
    expect(
      (await json<StoredEvent[]>(['events', 'order-7', '--from', '4'])).map((e) => e.sequence),
    ).toEqual([4, 5]);
  });

  it('verify checks one chain or all of them, with a progress line', async () => {
    expect(await json(['verify', 'order-7'])).toMatchObject({
      ok: true,
      executionId: 'order-7',
      events: 6,
    });
    const all = await loomInProcess(['verify', '--all'], env());
    expect(all.code).toBe(0);
    expect(all.stderr).toContain('verified 7 executions, 0 broken');
    expect(all.stdout).toContain('ok: 7 executions');
  });

  it('errors are typed, say what to do, and have exit codes', async () => {
    const missing = await loom(['show', 'nope'], env());
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('RUN_NOT_FOUND');
    expect(missing.stderr).toContain('loom runs');
    const asJson = await loom(['show', 'nope', '--json'], env());
    expect(JSON.parse(asJson.stderr)).toMatchObject({
      error: { code: 'RUN_NOT_FOUND', fields: { executionId: 'nope' } },
    });
    expect(asJson.stdout).toBe('');
    // The bin exits with what runCli returns (above); the rest of the codes come from runCli.
    expect((await loomInProcess(['signal', 'wait-signal', 'go', '{not json'], env())).code).toBe(2);
    expect((await loomInProcess(['runs', '--status', 'bogus'], env())).code).toBe(2);
    expect((await loomInProcess(['runs'], {})).code).toBe(2);
    expect((await loomInProcess(['verify'], env())).code).toBe(2);
    expect((await loomInProcess(['approve', 'agent-1~nope', '--by', 'ana'], env())).code).toBe(3);
  });

  it('signal is delivered: the waiting flow continues with the payload when resumed (and tail follows it live)', async () => {
    let caughtUp: () => void = () => {};
    const following = new Promise<void>((resolve) => {
      caughtUp = resolve;
    });
    const tail = loom(['tail', 'wait-signal', '--json'], env(), (so_far) => {
      if (so_far.includes('"signal.waiting"')) caughtUp();
    });
    await Promise.race([
      following,
      tail.then((out) => Promise.reject(new Error(`tail ended early: ${out.stderr}`))),
    ]);
    const sent = await json<{ duplicate: boolean }>([
      'signal',
      'wait-signal',
      'go',
      '{"go":true}',
      '--key',
      'k1',
    ]);
    expect(sent.duplicate).toBe(false);
    expect(
      (
        await json<{ duplicate: boolean }>([
          'signal',
          'wait-signal',
          'go',
          '{"go":true}',
          '--key',
          'k1',
        ])
      ).duplicate,
    ).toBe(true);
    const backend = await target.open(false);
    const { flows } = runtimeOn(backend);
    try {
      await flows.wakeDue();
      expect(await flows.attach('wait-signal').result()).toEqual({ go: true });
    } finally {
      await flows.shutdown();
    }
    const tailed = await tail;
    expect(tailed.code).toBe(0);
    const types = tailed.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as StoredEvent).type);
    expect(types[0]).toBe('execution.started');
    expect(types).toContain('signal.received');
    expect(types[types.length - 1]).toBe('execution.completed');
  });

  it('cancel is recorded with who and why; a second cancel reports nothing to do', async () => {
    expect(await json(['cancel', 'wait-cancel', '--by', 'ops', '--reason', 'stuck'])).toEqual({
      executionId: 'wait-cancel',
      cancelled: true,
    });
    const detail = await json<RunDetail>(['show', 'wait-cancel']);
    expect(detail.run.status).toBe('cancelled');
    expect(detail.run.terminalReason).toBe('cancelled by ops: stuck');
    expect(await json(['cancel', 'wait-cancel', '--by', 'ops'])).toEqual({
      executionId: 'wait-cancel',
      cancelled: false,
    });
  });

  it('approve decides through agent-loop; the run continues when resumed and the tool runs once', async () => {
    const [approval] = await json<Approval[]>(['approvals']);
    expect(approval?.runId).toBe('agent-1');
    const id = approval?.id ?? '';
    expect(await json(['approve', id, '--by', 'ana', '--note', 'ok'])).toEqual({
      approvalId: id,
      decision: 'approved',
      by: 'ana',
    });
    const again = await loomInProcess(['reject', id, '--by', 'bob'], env());
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('APPROVAL_NOT_PENDING');
    expect(await json<Approval[]>(['approvals'])).toEqual([]);
    const mailsBefore = sentMails.length;
    const backend = await target.open(false);
    const { flows, agents } = runtimeOn(backend);
    try {
      await flows.wakeDue();
      expect(await agents.attach('agent-1').result()).toMatchObject({
        reason: 'goal_completed',
        output: 'mailed ana',
      });
    } finally {
      await flows.shutdown();
    }
    expect(sentMails.length - mailsBefore).toBe(1);
    const detail = await json<RunDetail>(['show', 'agent-1']);
    expect(detail.run).toMatchObject({
      status: 'completed',
      terminalReason: 'goal_completed',
      pendingApprovals: 0,
    });
    expect(detail.approvals[0]?.decision).toMatchObject({
      by: 'ana',
      note: 'ok',
      decision: 'approved',
    });
    expect(detail.timeline.map((e) => e.agentRole)).toContain('tool_call');
  });

  it('verify finds an edited event: exit 1 and the first broken sequence', async () => {
    await target.tamper('order-7', 2);
    const one = await loomInProcess(['verify', 'order-7', '--json'], env());
    expect(one.code).toBe(1);
    expect(JSON.parse(one.stdout)).toMatchObject({
      ok: false,
      executionId: 'order-7',
      brokenAtSequence: 2,
    });
    const all = await loomInProcess(['verify', '--all'], env());
    expect(all.code).toBe(1);
    expect(all.stdout).toContain('BROKEN: order-7 at sequence 2');
    expect(all.stderr).toContain('1 broken');
  });
});

describe('loom when the database cannot be used', () => {
  it('an unreachable Postgres is STORE_UNAVAILABLE, exit 5, and the process does not crash', async () => {
    const out = await loom(['runs', '--db', 'postgres://root@127.0.0.1:1/test?schema=x']);
    expect(out.code).toBe(5);
    expect(out.stderr).toContain('STORE_UNAVAILABLE');
  });

  it('an unmigrated SQLite file is SCHEMA_NOT_MIGRATED, exit 5, for reads and writes alike', async () => {
    const path = join(dir, 'empty.db');
    writeFileSync(path, '');
    for (const args of [
      ['runs'],
      ['cancel', 'x', '--by', 'ops'],
      ['approve', 'x~1', '--by', 'ops'],
    ]) {
      const out = await loomInProcess([...args, '--db', `sqlite:${path}`, '--json']);
      expect(out.code).toBe(5);
      expect(JSON.parse(out.stderr)).toMatchObject({ error: { code: 'SCHEMA_NOT_MIGRATED' } });
    }
    expect(statSync(path).size).toBe(0);
  });
});
