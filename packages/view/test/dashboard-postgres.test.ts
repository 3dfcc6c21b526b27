// The dashboard's HTTP API over a real Postgres schema (its own, dropped and made anew), with a
// runtime in this process serving the runs: reads, the event stream, and every mutation.
import type { Approval } from '@loom/agent-loop';
import type { Backend, StoredEvent } from '@loom/event-runtime';
import { openPostgres } from '@loom/event-runtime/postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Dashboard,
  type RunCounts,
  type RunDetail,
  type RunSearchPage,
  type RunsPage,
  startDashboard,
} from '../src/index.js';
import { firstEvent, http, servingRuntime, until } from './dashboard-support.js';
import { populate, type Running } from './fixture.js';

const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `h_dash_dashboard_${process.pid}`;

async function dropSchema(): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

describe('the dashboard API on Postgres', () => {
  let backend: Backend;
  let running: Running;
  let dashboard: Dashboard;
  const auth = () => ({ authorization: `Bearer ${dashboard.token}` });
  const get = async <T>(path: string): Promise<T> => {
    const reply = await http(`${dashboard.url}${path}`);
    expect(reply.status).toBe(200);
    return reply.body as T;
  };
  const statusOf = async (id: string) => (await get<RunDetail>(`api/runs/${id}`)).run.status;

  beforeAll(async () => {
    await dropSchema();
    backend = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
    running = servingRuntime(backend);
    await populate(running, backend);
    dashboard = await startDashboard({
      db: `${pgUrl}?schema=${schema}`,
      port: 0,
      token: 'postgres-test-token-0123456789',
      pollMs: 100,
    });
  });
  afterAll(async () => {
    await dashboard?.close();
    await running?.flows.shutdown();
    await dropSchema();
  });

  it('lists runs, filters them, and shows a run with its events', async () => {
    const page = await get<RunsPage>('api/runs');
    expect(page.runs.map((r) => r.id).sort()).toEqual(
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
    expect(page.runs.find((r) => r.id === 'agent-1')).toMatchObject({
      status: 'suspended',
      pendingApprovals: 1,
    });
    expect((await get<RunsPage>('api/runs?status=failed')).runs.map((r) => r.id)).toEqual([
      'charge-1',
    ]);
    const bad = await http(`${dashboard.url}api/runs?status=bogus`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    const order = await get<RunDetail>('api/runs/order-7');
    expect(order.timeline.map((e) => e.name)).toEqual(['price', 'receipt']);
    const events = await get<StoredEvent[]>('api/runs/order-7/events');
    expect(events.map((e) => e.type)).toEqual([
      'execution.started',
      'step.started',
      'step.completed',
      'step.started',
      'step.completed',
      'execution.completed',
    ]);
  });

  it('searches runs by id prefix, flow and waiting, sorts, pages by cursor both ways, counts', async () => {
    const waiters = await get<RunSearchPage>('api/runs?flow=waiter&sort=created&order=asc');
    expect(waiters.runs.map((r) => r.id)).toEqual(['wait-signal', 'wait-cancel']);
    expect((await get<RunSearchPage>('api/runs?id=parent-')).runs.map((r) => r.id).sort()).toEqual([
      'parent-1',
      'parent-1.0',
    ]);
    expect(
      (await get<RunSearchPage>('api/runs?waiting=input&sort=created&order=asc')).runs.map(
        (r) => r.id,
      ),
    ).toEqual(['wait-signal', 'wait-cancel', 'agent-1']);
    const waitingFor = async (kind: string) =>
      (await get<RunSearchPage>(`api/runs?waiting=${kind}&sort=created&order=asc`)).runs.map(
        (r) => r.id,
      );
    expect(await waitingFor('approval')).toEqual(['agent-1']);
    expect(await waitingFor('signal')).toEqual(['wait-signal', 'wait-cancel']);
    expect(await waitingFor('question')).toEqual([]);
    expect(await get<RunCounts>('api/counts?waiting=approval')).toMatchObject({
      suspended: 1,
      total: 1,
    });
    const newest = await get<RunSearchPage>('api/runs?sort=created');
    const ids = newest.runs.map((r) => r.id);
    const first = await get<RunSearchPage>('api/runs?sort=created&limit=3');
    expect(first.runs.map((r) => r.id)).toEqual(ids.slice(0, 3));
    const second = await get<RunSearchPage>(
      `api/runs?sort=created&limit=3&after=${first.nextCursor}`,
    );
    expect(second.runs.map((r) => r.id)).toEqual(ids.slice(3, 6));
    const back = await get<RunSearchPage>(
      `api/runs?sort=created&limit=3&before=${second.prevCursor}`,
    );
    expect(back.runs.map((r) => r.id)).toEqual(ids.slice(0, 3));
    expect(back.prevCursor).toBeNull();
    expect(await get<RunCounts>('api/counts?flow=waiter')).toMatchObject({
      suspended: 2,
      total: 2,
    });
    const counts = await get<RunCounts>('api/counts');
    expect(counts.total).toBe(ids.length);
    expect(counts.failed).toBe(1);
    const bad = await http(
      `${dashboard.url}api/runs?sort=created&after=${first.nextCursor}&order=asc`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: { code: 'INVALID_ARGUMENT', fields: { path: 'after' } },
    });
  });

  it('the event stream sends the filtered runs and the open run', async () => {
    const runs = (await firstEvent(
      `${dashboard.url}api/stream?status=completed`,
      'runs',
    )) as RunsPage;
    expect(runs.runs.every((r) => r.status === 'completed')).toBe(true);
    expect(runs.runs.map((r) => r.id)).toContain('order-7');
    const run = (await firstEvent(
      `${dashboard.url}api/stream?run=wait-signal`,
      'run',
    )) as RunDetail;
    expect(run.run.id).toBe('wait-signal');
  });

  it('approve with the token: the run completes; a second decision is 409; no token is 401', async () => {
    const [approval] = await get<Approval[]>('api/approvals');
    expect(approval?.runId).toBe('agent-1');
    const url = `${dashboard.url}api/approvals/${encodeURIComponent(approval?.id ?? '')}/approve`;
    expect((await http(url, { method: 'POST', body: {} })).status).toBe(401);
    const approved = await http(url, { method: 'POST', body: { by: 'ana' }, headers: auth() });
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ approvalId: approval?.id, decision: 'approved', by: 'ana' });
    await until(
      async () => ((await statusOf('agent-1')) === 'completed' ? true : undefined),
      'agent-1 completed',
    );
    const again = await http(url, { method: 'POST', body: {}, headers: auth() });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: { code: 'APPROVAL_NOT_PENDING' } });
  });

  it('signal and cancel with the token reach their runs', async () => {
    const signalled = await http(`${dashboard.url}api/runs/wait-signal/signal`, {
      method: 'POST',
      body: { name: 'go', payload: { go: true } },
      headers: auth(),
    });
    expect(signalled.status).toBe(200);
    expect(signalled.body).toMatchObject({ executionId: 'wait-signal', duplicate: false });
    await until(
      async () => ((await statusOf('wait-signal')) === 'completed' ? true : undefined),
      'wait-signal completed',
    );
    expect((await get<RunDetail>('api/runs/wait-signal')).output).toEqual({ go: true });
    const cancelled = await http(`${dashboard.url}api/runs/wait-cancel/cancel`, {
      method: 'POST',
      body: { by: 'ops', reason: 'stuck' },
      headers: auth(),
    });
    expect(cancelled.body).toEqual({ executionId: 'wait-cancel', cancelled: true });
    const detail = await get<RunDetail>('api/runs/wait-cancel');
    expect(detail.run.terminalReason).toBe('cancelled by ops: stuck');
    const missing = await http(`${dashboard.url}api/runs/nope/cancel`, {
      method: 'POST',
      body: {},
      headers: auth(),
    });
    expect(missing.status).toBe(404);
  });
});
