// The dashboard's schedules and queues panel: a real SQLite file with queued items nobody works
// on and a schedule that fires every second, the dashboard on 127.0.0.1, Debian's Chromium.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow, type Runtime } from '@loom/workflow-runtime';
import { occurrences } from '@loom/workflow-runtime/cron';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Dashboard, startDashboard } from '../src/index.js';
import { http, openBrowser, openPage, until } from './dashboard-support.js';

const waitMs = 30_000;
const dir = mkdtempSync(join(tmpdir(), 'loom-view-dashboard-ops-'));
const sqlitePath = join(dir, 'loom.db');

const mail = defineFlow({ name: 'mail' }, async (ctx, input: { to: string }) =>
  ctx.step('send', () => `sent to ${input.to}`),
);
const tick = defineFlow({ name: 'tick' }, async (ctx) => ctx.step('tock', () => 'tocked'));

let backend: Backend;
let flows: Runtime;
let dashboard: Dashboard;
let browser: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

interface Operations {
  schedules: {
    name: string;
    expression: string;
    timezone: string;
    nextFiresAtMs: number[];
    recentRuns: { id: string; status: string }[];
  }[];
  queues: { queue: string; depth: number; claimed: number }[];
}

beforeAll(async () => {
  backend = await openSqlite({ path: sqlitePath, migrate: true });
  // No worker takes the queues: their items wait. The timer poll fires the schedule.
  flows = createRuntime({ backend, flows: [mail, tick], timerPollMs: 50 });
  for (const to of ['ana', 'bob', 'cy']) await flows.enqueue('emails', mail, { to });
  await flows.schedule(tick, '* * * * * *', { name: 'every-second' });
  await until(async () => {
    const runs = await backend.events.findExecutions({ flow: 'tick', status: 'completed' });
    return runs[0]?.executionId;
  }, 'a fired occurrence of every-second');
  dashboard = await startDashboard({ db: `sqlite:${sqlitePath}`, port: 0, pollMs: 100 });
  browser = await openBrowser(join(dir, 'chromium-profile'));
  page = await openPage(browser, dashboard.urlWithToken, pageErrors);
});

afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  await flows?.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe('the schedules and queues panel', () => {
  it('/api/operations: each schedule with its next three fires and its latest runs; each queue with its counts', async () => {
    const reply = await http(`${dashboard.url}api/operations`);
    expect(reply.status).toBe(200);
    const ops = reply.body as Operations;
    const [schedule] = ops.schedules;
    expect(schedule).toMatchObject({ name: 'every-second', expression: '* * * * * *' });
    const fires = schedule?.nextFiresAtMs ?? [];
    expect(fires).toHaveLength(3);
    // The first is the schedule's next fire; the rest follow from the expression.
    expect(fires.slice(1)).toEqual(
      occurrences('* * * * * *', fires[0] as number, schedule?.timezone, 2),
    );
    expect(schedule?.recentRuns.length).toBeGreaterThanOrEqual(1);
    for (const run of schedule?.recentRuns ?? []) expect(run.id).toMatch(/^cron:every-second:/);
    expect(ops.queues).toEqual([
      expect.objectContaining({ queue: 'emails', depth: 3, claimed: 0 }),
    ]);
  });

  it('the page lists the schedule and the queue, and a schedule run opens with a click', async () => {
    const row = page.locator('#schedules-body tr[data-schedule="every-second"]');
    await row.waitFor({ timeout: waitMs });
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(0, 3)).toEqual(['every-second', '* * * * * *', 'tick']);
    expect(cells[3]?.split(', ')).toHaveLength(3);
    const queue = await page.locator('#queues-body tr[data-queue="emails"] td').allTextContents();
    expect(queue).toEqual(['emails', '3', '0', '0', '0', '0']);
    const open = page.locator('#schedules-body tr[data-schedule="every-second"] button').first();
    const runId = (await open.getAttribute('title'))?.replace(/^show /, '') ?? '';
    expect(runId).toMatch(/^cron:every-second:/);
    await open.click();
    await page.waitForSelector(`#detail-head h2:text-is("${runId}")`, { timeout: waitMs });
    expect(pageErrors).toEqual([]);
  });
});
