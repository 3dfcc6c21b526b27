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
const nap = defineFlow({ name: 'nap' }, async (ctx) => {
  await ctx.sleep(3_600_000);
  return 'rested';
});

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
  flows = createRuntime({ backend, flows: [mail, tick, nap], timerPollMs: 50 });
  for (const id of ['nap-1', 'nap-2', 'nap-3']) await flows.start(nap, null, { executionId: id });
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

describe('a bulk action on the runs of a page', () => {
  it('the API checks the action and the ids, and answers each run on its own', async () => {
    const post = (body: unknown) =>
      http(`${dashboard.url}api/runs/bulk`, {
        method: 'POST',
        headers: { authorization: `Bearer ${dashboard.token}` },
        body,
      });
    const badAction = await post({ action: 'delete', runIds: ['nap-1'], by: 'ana' });
    expect(badAction.status).toBe(400);
    expect(badAction.body).toMatchObject({
      error: { code: 'INVALID_ARGUMENT', fields: { path: 'action' } },
    });
    const noIds = await post({ action: 'cancel', runIds: [], by: 'ana' });
    expect(noIds.status).toBe(400);
    expect(noIds.body).toMatchObject({ error: { fields: { path: 'runIds' } } });
    // A run that is not failed cannot be retried; one that does not exist is not found; both
    // answered, nothing else touched.
    const mixed = await post({ action: 'retry', runIds: ['nap-1', 'nobody'], by: 'ana' });
    expect(mixed.status).toBe(200);
    expect(mixed.body).toMatchObject({
      action: 'retry',
      results: [
        { executionId: 'nap-1', ok: false, error: { code: 'EXECUTION_NOT_FAILED' } },
        { executionId: 'nobody', ok: false, error: { code: 'EXECUTION_NOT_FOUND' } },
      ],
    });
  });

  it('cancel the runs a search shows, after a confirmation, with who and why in each log', async () => {
    await page.locator('#filter-flow').fill('nap');
    await page.waitForSelector('#runs-count:text-is("3 runs on this page")', { timeout: waitMs });
    await page.locator('#by').fill('ana');
    await page.locator('#by').dispatchEvent('change');
    await page.locator('#bulk-reason').fill('cleanup');
    await page.selectOption('#bulk-action', 'cancel');
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.locator('#bulk-apply').click();
    await page.waitForSelector('#flash:has-text("cancel: 3 of 3 done")', { timeout: waitMs });
    expect(asked).toContain('cancel 3 runs');
    for (const id of ['nap-1', 'nap-2', 'nap-3']) {
      const events = await backend.events.read(id);
      expect(events.at(-1)).toMatchObject({
        type: 'execution.cancelled',
        payload: { reason: 'cancelled by ana: cleanup' },
      });
    }
    expect(pageErrors).toEqual([]);
  });
});
