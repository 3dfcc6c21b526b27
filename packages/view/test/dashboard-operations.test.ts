// The dashboard's schedules and queues panel: a real SQLite file with queued items nobody works
// on and a schedule that fires every second, the dashboard on 127.0.0.1, Debian's Chromium.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend } from '@loom/event-runtime';
import { openSqlite } from '@loom/event-runtime/sqlite';
import { createRuntime, defineFlow, type Runtime } from '@loom/workflow-runtime';
import { occurrences } from '@loom/workflow-runtime/cron';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Dashboard, startDashboard } from '../src/index.js';
import { http, openBrowser, openPage, until } from './dashboard-support.js';

const waitMs = 30_000;
const artifacts = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
const docsImg = fileURLToPath(new URL('../../../docs/img/', import.meta.url));
/** Saves a screenshot under test-artifacts/, and under docs/img/ when LOOM_UPDATE_DOCS_IMG=1. */
async function shoot(target: Page, name: string, selector?: string): Promise<void> {
  const path = join(artifacts, name);
  if (selector === undefined) await target.screenshot({ path, fullPage: true });
  else await target.locator(selector).screenshot({ path });
  if (process.env.LOOM_UPDATE_DOCS_IMG === '1') copyFileSync(path, join(docsImg, name));
}
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
const doze = defineFlow({ name: 'doze' }, async (ctx) => {
  await ctx.sleep(3_600_000);
  return 'rested';
});
const broken = defineFlow({ name: 'broken' }, async (ctx) =>
  ctx.step('fail', () => {
    throw new Error('still broken');
  }),
);
/** The ids of the emails enqueued, in order. */
const emailIds: string[] = [];

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
  queues: {
    queue: string;
    depth: number;
    claimed: number;
    oldestWaiting?: { itemId: string; flow: string; enqueuedAtMs: number } | null;
  }[];
}

beforeAll(async () => {
  backend = await openSqlite({ path: sqlitePath, migrate: true });
  // No worker takes the queues: their items wait. The timer poll fires the schedule.
  mkdirSync(artifacts, { recursive: true });
  flows = createRuntime({ backend, flows: [mail, tick, nap, doze, broken], timerPollMs: 50 });
  for (const id of ['nap-1', 'nap-2', 'nap-3']) await flows.start(nap, null, { executionId: id });
  for (const id of ['doze-1', 'doze-2', 'doze-3', 'doze-4', 'doze-5']) {
    await flows.start(doze, null, { executionId: id });
  }
  for (const id of ['broken-1', 'broken-2']) {
    await (await flows.start(broken, null, { executionId: id })).result().catch(() => undefined);
  }
  for (const to of ['ana', 'bob', 'cy']) {
    emailIds.push((await flows.enqueue('emails', mail, { to })).itemId);
  }
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
    // Its oldest waiting item: the first enqueued, with its flow and when it was enqueued.
    const oldest = ops.queues[0]?.oldestWaiting;
    expect(oldest).toMatchObject({ itemId: emailIds[0], flow: 'mail' });
    expect(oldest?.enqueuedAtMs).toBeLessThanOrEqual(Date.now());
  });

  it('the page lists the schedule and the queue, and a schedule run opens with a click', async () => {
    const row = page.locator('#schedules-body tr[data-schedule="every-second"]');
    await row.waitFor({ timeout: waitMs });
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(0, 3)).toEqual(['every-second', '* * * * * *', 'tick']);
    expect(cells[3]?.split(', ')).toHaveLength(3);
    const queue = await page.locator('#queues-body tr[data-queue="emails"] td').allTextContents();
    expect(queue.slice(0, 6)).toEqual(['emails', '3', '0', '0', '0', '0']);
    // The oldest waiting item: its id, its flow, how long it has waited.
    expect(queue[6]).toMatch(new RegExp(`^${emailIds[0]} · mail · waiting \\d+ (s|min)$`));
    // Limits are per worker and not stored: the page says so rather than showing nothing.
    expect(await page.locator('#queue-limits').textContent()).toContain('not stored');
    await shoot(page, 'dashboard-queues.png', '#operations');
    const open = page.locator('#schedules-body tr[data-schedule="every-second"] button').first();
    const runId = (await open.getAttribute('title'))?.replace(/^show /, '') ?? '';
    expect(runId).toMatch(/^cron:every-second:/);
    await open.click();
    await page.waitForSelector(`#detail-head h2:text-is("${runId}")`, { timeout: waitMs });
    expect(pageErrors).toEqual([]);
  });
});

describe('a bulk action on runs selected across pages', () => {
  it('selects runs on two pages (keyset paging), names how many, and acts on exactly those', async () => {
    // Two runs a page: doze-5 … doze-1 over three pages, newest first.
    await page.goto(`${dashboard.url}?flow=doze&limit=2`);
    await page.waitForSelector('#runs-count:text-is("2 runs on this page")', { timeout: waitMs });
    const firstPage = await page
      .locator('#runs-body tr')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run') ?? ''));
    expect(firstPage).toHaveLength(2);
    const [onFirst] = firstPage as [string];
    await page.getByLabel(`select ${onFirst} for a bulk action`).check();
    await page.waitForSelector('#selected-count:text-is("1 selected")', { timeout: waitMs });
    await page.locator('#next-page').click();
    await page.waitForSelector(`#runs-body tr[data-run="${onFirst}"]`, {
      state: 'detached',
      timeout: waitMs,
    });
    const secondPage = await page
      .locator('#runs-body tr')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run') ?? ''));
    expect(secondPage).toHaveLength(2);
    expect(secondPage).not.toContain(onFirst);
    const [onSecond] = secondPage as [string];
    await page.getByLabel(`select ${onSecond} for a bulk action`).check();
    await page.waitForSelector('#selected-count:text-is("2 selected")', { timeout: waitMs });
    expect(await page.locator('#bulk-apply').textContent()).toBe('Apply to the 2 selected runs');
    // Back to the first page: its selected run is still ticked.
    await page.locator('#prev-page').click();
    await page.waitForSelector(`#runs-body tr[data-run="${onFirst}"]`, { timeout: waitMs });
    expect(await page.getByLabel(`select ${onFirst} for a bulk action`).isChecked()).toBe(true);
    await shoot(page, 'dashboard-selection.png', '#runs-pane');

    await page.locator('#by').fill('ana');
    await page.locator('#by').dispatchEvent('change');
    await page.locator('#bulk-reason').fill('picked by hand');
    await page.selectOption('#bulk-action', 'cancel');
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.locator('#bulk-apply').click();
    await page.waitForSelector('#flash:has-text("cancel: 2 of 2 done")', { timeout: waitMs });
    expect(asked).toContain('cancel 2 selected runs');
    expect(asked).toContain(onFirst);
    expect(asked).toContain(onSecond);
    // Exactly those two were cancelled, with who and why; the other three still sleep.
    for (const id of ['doze-1', 'doze-2', 'doze-3', 'doze-4', 'doze-5']) {
      const last = (await backend.events.read(id)).at(-1);
      if (id === onFirst || id === onSecond) {
        expect(last).toMatchObject({
          type: 'execution.cancelled',
          payload: { reason: 'cancelled by ana: picked by hand' },
        });
      } else {
        expect(last?.type).not.toBe('execution.cancelled');
      }
    }
    // The selection is spent: the button acts on the page again.
    await page.waitForSelector('#bulk-apply:text-is("Apply to the runs on this page")', {
      timeout: waitMs,
    });
    await page.goto(dashboard.url);
    await page.waitForSelector('#runs-body tr', { timeout: waitMs });
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
    // A bulk retry records who asked and why in each failed run's execution.retried.
    const retried = await post({
      action: 'retry',
      runIds: ['broken-1', 'broken-2'],
      by: 'ana',
      reason: 'dependency restored',
    });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({
      action: 'retry',
      by: 'ana',
      results: [
        { executionId: 'broken-1', ok: true },
        { executionId: 'broken-2', ok: true },
      ],
    });
    for (const id of ['broken-1', 'broken-2']) {
      const events = await backend.events.read(id);
      const event = events.find((e) => e.type === 'execution.retried');
      expect(event?.payload).toMatchObject({ by: 'ana', reason: 'dependency restored' });
    }
    // One run's retry: the same, and the answer names who.
    await until(async () => {
      const last = (await backend.events.read('broken-1')).at(-1);
      return last?.type === 'execution.failed' ? true : undefined;
    }, 'broken-1 to fail again after its retry');
    const one = await http(`${dashboard.url}api/runs/broken-1/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dashboard.token}` },
      body: { by: 'bo', reason: 'second try' },
    });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ executionId: 'broken-1', by: 'bo' });
    const retries = (await backend.events.read('broken-1')).filter(
      (e) => e.type === 'execution.retried',
    );
    expect(retries.map((e) => e.payload)).toMatchObject([
      { by: 'ana', reason: 'dependency restored' },
      { by: 'bo', reason: 'second try' },
    ]);
    const tooLong = await http(`${dashboard.url}api/runs/broken-2/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dashboard.token}` },
      body: { by: 'bo', reason: 'x'.repeat(2_001) },
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ error: { fields: { path: 'reason' } } });
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
